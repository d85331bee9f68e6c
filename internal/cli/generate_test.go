package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenerate(t *testing.T) {
	namespaces := filepath.Join("..", "..", "generator", "testdata", "example.namespaces.yaml")
	golden, err := os.ReadFile(filepath.Join("..", "..", "generator", "testdata", "example.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     func(string) bool
		stderrHas  string
		stderrNone bool
	}{
		{"every companion of the namespaces given", []string{"--objects", namespaces}, ExitOK,
			func(s string) bool { return s == string(golden) }, "", true},
		{"no namespaces: the cluster-wide RBAC and a note naming every tenant", nil, ExitOK,
			func(s string) bool { return strings.Count(s, "\nkind: ") == 3 }, `no namespace of tenant "gas", "oil" in the input (no --objects given`, false},
		{"one tenant: its namespaced companions only", []string{"--objects", namespaces, "--tenant", "gas"}, ExitOK,
			func(s string) bool {
				return strings.Count(s, "\nkind: ") == 4 && !strings.Contains(s, "\nkind: ClusterRole") && !strings.Contains(s, "tenantguard.io/tenant: oil")
			}, "", true},
		{"another instance: its names and label on every object", []string{"--objects", namespaces, "--instance", "blue"}, ExitOK,
			func(s string) bool {
				return !strings.Contains(s, "name: tenantguard-") && strings.Contains(s, "name: blue-namespace-creator") &&
					strings.Count(s, "tenantguard.io/instance: blue") == strings.Count(s, "\nkind: ")
			}, "", true},
		{"an instance that is not a DNS label is a usage error", []string{"--instance", "Blue"}, ExitUsage,
			func(s string) bool { return s == "" }, `--instance: instance "Blue"`, false},
		{"an unknown tenant is a usage error", []string{"--tenant", "nope"}, ExitUsage,
			func(s string) bool { return s == "" }, `tenant "nope" is not in the registry`, false},
		{"an unreadable objects file is a usage error", []string{"--objects", "missing.yaml"}, ExitUsage,
			func(s string) bool { return s == "" }, "missing.yaml", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", append([]string{"generate", "--registry", examples("registry.yaml")}, tt.args...)...)
			if r.code != tt.code || !tt.stdout(r.stdout) || !strings.Contains(r.stderr, tt.stderrHas) || (tt.stderrNone && r.stderr != "") {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

func TestGenerateNeedsARegistry(t *testing.T) {
	r := run(t, "", "generate")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--registry is required") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}
