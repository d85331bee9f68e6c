// Package rego embeds tenantguard's Rego rule library: the bundle root with
// its .manifest and one package per rule family under tenantguard/. The same
// files are what `opa test rego/` runs and what the engine compiles.
package rego

import (
	"embed"
	"io/fs"
	"strings"
)

//go:embed .manifest tenantguard
var bundle embed.FS

// FS is the bundle root: .manifest and tenantguard/**.rego.
func FS() fs.FS { return bundle }

// Modules returns the policy modules of a bundle root (tests excluded),
// keyed by their path. Hidden entries are skipped, among them the "..data"
// folders through which Kubernetes swaps a mounted ConfigMap atomically.
func Modules(root fs.FS) (map[string]string, error) {
	return files(root, false)
}

// Tests returns the test modules (*_test.rego) of a bundle root, keyed by
// their path, skipping hidden entries as Modules does.
func Tests(root fs.FS) (map[string]string, error) {
	return files(root, true)
}

func files(root fs.FS, tests bool) (map[string]string, error) {
	modules := map[string]string{}
	err := fs.WalkDir(root, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !strings.HasSuffix(path, ".rego") || strings.HasSuffix(path, "_test.rego") != tests {
			return err
		}
		src, err := fs.ReadFile(root, path)
		if err != nil {
			return err
		}
		modules[path] = string(src)
		return nil
	})
	return modules, err
}
