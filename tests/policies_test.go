package tests

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenantguard/tenantguard/internal/cli"
	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// TestPoliciesAreCurrent fails when policies/ differs from what `make
// generate` writes for examples/registry.yaml: a file changed, missing or
// left over, for every engine.
func TestPoliciesAreCurrent(t *testing.T) {
	snap, err := registry.Load(filepath.Join("..", "examples", "registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writers := map[string]func(dir string) error{
		"bundle": func(dir string) error {
			b, err := export.Bundle(snap, export.BundleOptions{})
			if err != nil {
				return err
			}
			return export.WriteDir(dir, b)
		},
		"gatekeeper": writeLibrary(func() (*export.Library, error) { return export.Gatekeeper(snap, export.Options{}) }),
		"kyverno":    writeLibrary(func() (*export.Library, error) { return export.Kyverno(snap, export.Options{}) }),
		"vap":        writeLibrary(func() (*export.Library, error) { return export.VAP(snap, export.Options{}) }),
	}
	for engine, write := range writers {
		t.Run(engine, func(t *testing.T) {
			fresh := t.TempDir()
			if err := write(fresh); err != nil {
				t.Fatal(err)
			}
			want, got := files(t, fresh), files(t, filepath.Join("..", "policies", engine))
			for name, content := range want {
				if existing, ok := got[name]; !ok {
					t.Errorf("policies/%s/%s is missing: run `make generate`", engine, name)
				} else if !bytes.Equal(existing, content) {
					t.Errorf("policies/%s/%s is stale: run `make generate`", engine, name)
				}
			}
			for name := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("policies/%s/%s is left over: run `make generate`", engine, name)
				}
			}
		})
	}
}

// TestGeneratedFilesAreCurrent fails when a file `make generate` derives
// from the rule library's METADATA differs from what it writes: the rules
// table of the docs and the chart's webhook rules.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	for file, args := range map[string][]string{
		filepath.Join("..", "docs", "rules.md"):                                     {"rules", "-o", "markdown"},
		filepath.Join("..", "charts", "tenantguard", "files", "webhook-rules.yaml"): {"rules", "-o", "webhook-rules"},
	} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			var out, errs bytes.Buffer
			if code := cli.Run(args, strings.NewReader(""), &out, &errs); code != 0 {
				t.Fatalf("tenantguard %s: exit %d: %s", strings.Join(args, " "), code, errs.String())
			}
			existing, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(existing, out.Bytes()) {
				t.Errorf("%s is stale: run `make generate`", file)
			}
		})
	}
}

func writeLibrary(build func() (*export.Library, error)) func(dir string) error {
	return func(dir string) error {
		lib, err := build()
		if err != nil {
			return err
		}
		return lib.WriteDir(dir)
	}
}

// files reads every file under dir by its slash path.
func files(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
