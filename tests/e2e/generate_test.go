package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenantguard/tenantguard/internal/cli"
	"github.com/tenantguard/tenantguard/tests/live"
)

// TestGenerateOutputIsAcceptedByTheAPIServer runs `tenantguard generate` on
// the shared example registry and server-side applies (dry run) every
// document it prints.
func TestGenerateOutputIsAcceptedByTheAPIServer(t *testing.T) {
	ctx := t.Context()
	for _, name := range []string{"gen-oil", "gen-gas"} {
		_, err := cluster.Client.CoreV1().Namespaces().Create(ctx, namespace(name, nil), metav1.CreateOptions{})
		wantAllowed(t, err)
	}
	nsFile := filepath.Join(t.TempDir(), "namespaces.yaml")
	if err := os.WriteFile(nsFile, []byte(`
apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: Namespace, metadata: {name: gen-oil, labels: {tenantguard.io/tenant: oil}}}
  - {apiVersion: v1, kind: Namespace, metadata: {name: gen-gas, labels: {tenantguard.io/tenant: gas}}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	registryFile := filepath.Join(live.Root(), "..", "shared", "examples", "registry.yaml")
	if _, err := os.Stat(registryFile); err != nil {
		registryFile = filepath.Join(live.Root(), "examples", "registry.yaml")
	}
	code := cli.RunContext(ctx, []string{"generate", "--registry", registryFile, "--objects", nsFile}, strings.NewReader(""), &out, &errOut)
	if code != 0 || errOut.Len() > 0 {
		t.Fatalf("generate exited %d: %s", code, errOut.String())
	}
	if n := strings.Count(out.String(), "\n---\n") + 1; n != 12 {
		t.Fatalf("%d documents, want 3 cluster-wide and 5 + 4 namespaced", n)
	}
	force := true
	applied, err := cluster.Apply(ctx, out.String(), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "generate-test", Force: &force})
	if err != nil {
		t.Error(err)
	}
	if len(applied) != 12 {
		t.Errorf("%d of 12 documents accepted", len(applied))
	}
}
