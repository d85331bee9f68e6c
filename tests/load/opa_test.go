package load

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenantguard/tenantguard/tests/scale"
)

// TestOPAFilesDecideAsTheCorpusSays runs the real opa on the files of
// WriteOPAFiles, as docs/policy-library.md has `opa bench` run on them:
// every kind of request is decided as the corpus expects.
func TestOPAFilesDecideAsTheCorpusSays(t *testing.T) {
	opa, err := filepath.Abs(filepath.Join("..", "..", "bin", "opa"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := Scale{Tenants: 3, Namespaces: 10, Pods: 2}
	if err := WriteOPAFiles(dir, s); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, r := range scale.Corpus(s.Tenants, 20) {
		want[r.Kind] = r.Allowed
	}
	for kind, allowed := range want {
		out, err := exec.CommandContext(t.Context(), opa, "eval", "--optimize-store-for-read-speed", "--format", "raw",
			"-b", filepath.Join(dir, "bundle.tar.gz"), "-d", filepath.Join(dir, "data.json"), "-i", filepath.Join(dir, kind+".json"),
			"data.tenantguard.kubernetes.validate.response.allowed").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", kind, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != map[bool]string{true: "true", false: "false"}[allowed] {
			t.Errorf("%s: allowed %s, want %t", kind, got, allowed)
		}
	}
}
