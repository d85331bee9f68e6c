package live

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	policy "github.com/tenantguard/tenantguard/rego"
)

// CopyPolicy writes the embedded rule library into dir, as a policy
// directory (--policy-dir), with the tests whose paths contain one of tests.
func CopyPolicy(dir string, tests ...string) error {
	return copyFS(policy.FS(), dir, func(path string) bool {
		return !strings.HasSuffix(path, "_test.rego") || slices.ContainsFunc(tests, func(s string) bool { return strings.Contains(path, s) })
	})
}

// CopyFamilyPolicy writes into dir the policy directory a security team
// makes to add a rule family: the embedded library with its tests, and the
// family the tests add (tests/fixtures/family/configmaps) as one more
// folder of it.
func CopyFamilyPolicy(dir string) error {
	if err := CopyPolicy(dir, "_test.rego"); err != nil {
		return err
	}
	return CopyDir(filepath.Join(Root(), "tests", "fixtures", "family", "configmaps"), filepath.Join(dir, "tenantguard", "rules", "configmaps"))
}

// CopyDir copies the files of a directory into dst (created).
func CopyDir(src, dst string) error {
	return copyFS(os.DirFS(src), dst, func(string) bool { return true })
}

// copyFS writes the files of fsys that keep accepts under dst.
func copyFS(fsys fs.FS, dst string, keep func(path string) bool) error {
	return fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !keep(path) {
			return err
		}
		data, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, path)
		if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o600)
	})
}

// ReplaceFile replaces a file by renaming a complete new one over it, the
// way a ConfigMap volume changes: a reader never sees it half written.
func ReplaceFile(path string, data []byte) error {
	if err := os.WriteFile(path+".tmp", data, 0o600); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
