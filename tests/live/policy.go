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
	return fs.WalkDir(policy.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasSuffix(path, "_test.rego") && !slices.ContainsFunc(tests, func(s string) bool { return strings.Contains(path, s) }) {
			return nil
		}
		data, err := fs.ReadFile(policy.FS(), path)
		if err != nil {
			return err
		}
		target := filepath.Join(dir, path)
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
