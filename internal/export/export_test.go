package export

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/registry"
)

func exampleRegistry(t *testing.T) *registry.Snapshot {
	t.Helper()
	snap, err := registry.Load(filepath.Join("..", "..", "examples", "registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestEveryLibraryAccountsForEveryRule(t *testing.T) {
	snap := exampleRegistry(t)
	builders := map[string]func() (*Library, error){
		"gatekeeper": func() (*Library, error) { return Gatekeeper(snap, Options{}) },
		"kyverno":    func() (*Library, error) { return Kyverno(snap, Options{}) },
		"vap":        func() (*Library, error) { return VAP(snap, Options{}) },
	}
	for name, build := range builders {
		t.Run(name, func(t *testing.T) {
			lib, err := build()
			if err != nil {
				t.Fatal(err)
			}
			ids := catalog.MustEmbedded().IDs()
			for _, id := range ids {
				text := lib.Coverage[id]
				if !strings.HasPrefix(text, "covered") && !strings.HasPrefix(text, "not covered: ") {
					t.Errorf("%s: coverage %q is neither covered nor a reason", id, text)
				}
			}
			if len(lib.Coverage) != len(ids) {
				t.Errorf("coverage has %d entries for %d rules", len(lib.Coverage), len(ids))
			}
		})
	}
}

func TestGatekeeperLibrariesReadNoDataOfTheirOwn(t *testing.T) {
	var libs []any
	for _, u := range gatekeeperUnits(catalog.MustEmbedded()) {
		l, err := u.libs(catalog.MustEmbedded())
		if err != nil {
			t.Fatal(err)
		}
		libs = append(libs, l...)
	}
	for _, lib := range libs {
		module, err := ast.ParseModuleWithOpts("lib.rego", lib.(string), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatalf("a rewritten library does not parse: %v\n%s", err, lib)
		}
		if !module.Package.Path.HasPrefix(ast.MustParseRef("data.lib.tenantguard")) {
			t.Errorf("package %v is outside data.lib", module.Package.Path)
		}
		ast.WalkRefs(module, func(ref ast.Ref) bool {
			if ref.HasPrefix(ast.DefaultRootRef) && !ref.HasPrefix(ast.MustParseRef("data.lib")) && !ref.HasPrefix(ast.MustParseRef("data.inventory")) {
				t.Errorf("%v reads data Gatekeeper does not have", ref)
			}
			return false
		})
	}
}

func TestCELLiteralsAreHomogeneous(t *testing.T) {
	got := celLiteral(map[string]any{"b": []any{"x", 1.0, true}, "a": map[string]any{}, "c": 2.5})
	want := `{"a": dyn({}), "b": dyn([dyn("x"), dyn(1), dyn(true)]), "c": dyn(2.5)}`
	if got != want {
		t.Errorf("celLiteral = %s\nwant          %s", got, want)
	}
	cleaned := withoutNulls(map[string]any{"a": nil, "b": []any{nil, "x"}, "c": map[string]any{"d": map[string]any{}, "e": []any{}}}).(map[string]any)
	if _, ok := cleaned["a"]; ok || cleaned["b"].([]any)[0] != "x" {
		t.Errorf("nulls are kept: %v", cleaned)
	}
	if c := cleaned["c"].(map[string]any); len(c) != 1 {
		t.Errorf("an empty map is kept, which a parameter object turns into a non-map: %v", cleaned)
	}
	// a map left empty by pruning goes too
	if _, ok := withoutNulls(map[string]any{"administrators": map[string]any{"users": map[string]any{}}}).(map[string]any)["administrators"]; ok {
		t.Error("a map emptied by pruning is kept")
	}
}

func TestWriteDirReplacesAnEarlierExportOnly(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "99-old-thing.yaml")
	if err := os.WriteFile(stale, []byte("kind: Old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lib := &Library{Objects: []map[string]any{{"kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}}}
	if err := lib.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a file of an earlier export was left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "01-configmap-x.yaml")); err != nil {
		t.Error(err)
	}
	for _, foreign := range []string{"README.md", "kustomization.yaml"} {
		other := t.TempDir()
		if err := os.WriteFile(filepath.Join(other, foreign), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := lib.WriteDir(other); err == nil {
			t.Errorf("wrote into a directory holding %s, which it did not write", foreign)
		}
		if _, err := os.Stat(filepath.Join(other, foreign)); err != nil {
			t.Errorf("%s was removed: %v", foreign, err)
		}
	}
}
