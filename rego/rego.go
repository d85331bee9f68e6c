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
	modules, _, err := ModulesAndTests(root)
	return modules, err
}

// ModulesAndTests returns the policy modules and the test modules
// (*_test.rego) of a bundle root, keyed by their path, read in one walk and
// skipping hidden entries as Modules does.
func ModulesAndTests(root fs.FS) (modules, tests map[string]string, err error) {
	modules, tests = map[string]string{}, map[string]string{}
	err = fs.WalkDir(root, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !strings.HasSuffix(path, ".rego") {
			return nil
		}
		src, err := fs.ReadFile(root, path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, "_test.rego") {
			tests[path] = string(src)
		} else {
			modules[path] = string(src)
		}
		return nil
	})
	return modules, tests, err
}
