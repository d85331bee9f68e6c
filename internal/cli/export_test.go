package cli

import (
	"github.com/tenantguard/tenantguard/internal/catalog"

	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestExportWritesEachEngineWithItsCoverageTable(t *testing.T) {
	tests := []struct {
		engine      string
		kinds       []string
		notCovered  []string
		firstObject string
	}{
		{"gatekeeper", []string{"SyncSet", "ConstraintTemplate", "TenantguardStorage", "TenantguardHostNetwork"}, nil, "01-syncset-tenantguard.yaml"},
		{"kyverno", []string{"ValidatingPolicy"}, []string{"namespace-quota", "tenant-quota", "hostname-collision", "tenant-resource-quota"}, "01-validatingpolicy-tenantguard-image-registry.yaml"},
		{"vap", []string{"CustomResourceDefinition", "PolicyParameters", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}, []string{"namespace-quota", "tenant-quota", "hostname-collision", "tenant-resource-quota"}, "01-customresourcedefinition-policyparameters.policy.tenantguard.io.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			r := run(t, "", "export", tt.engine, "--registry", examples("registry.yaml"), "-o", dir)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			ids := catalog.MustEmbedded().IDs()
			lines := map[string]int{}
			for _, line := range strings.Split(r.stdout, "\n") {
				fields := strings.Fields(line)
				if len(fields) < 2 || !slices.Contains(ids, fields[0]) {
					continue
				}
				lines[fields[0]]++
				wantCovered := !slices.Contains(tt.notCovered, fields[0])
				if got := fields[1] == "covered"; got != wantCovered {
					t.Errorf("coverage line %q: covered = %v, want %v", line, got, wantCovered)
				}
			}
			for _, id := range ids {
				if lines[id] != 1 {
					t.Errorf("the coverage table has %d lines for %s, want 1:\n%s", lines[id], id, r.stdout)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, tt.firstObject)); err != nil {
				t.Errorf("first object not written: %v", err)
			}
			single := filepath.Join(t.TempDir(), "all.yaml")
			if r := run(t, "", "export", tt.engine, "--registry", examples("registry.yaml"), "-o", single); r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			raw, err := os.ReadFile(single)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for doc := range strings.SplitSeq(string(raw), "---\n") {
				var obj map[string]any
				if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
					t.Fatal(err)
				}
				if kind, ok := obj["kind"].(string); ok {
					seen[kind] = true
				}
			}
			for _, kind := range tt.kinds {
				if !seen[kind] {
					t.Errorf("no %s in the stream", kind)
				}
			}
		})
	}
}

func TestExportToStdoutKeepsTheTableOnStderr(t *testing.T) {
	r := run(t, "", "export", "vap", "--registry", examples("registry.yaml"), "-o", "-")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "---\n") || strings.Contains(r.stdout, "not covered") {
		t.Errorf("stdout is not only the manifests:\n%.300s", r.stdout)
	}
	if !strings.Contains(r.stderr, "tenant-quota            not covered: counting") {
		t.Errorf("stderr lacks the coverage table:\n%s", r.stderr)
	}
}

func TestExportRefusesADirectoryItDidNotWrite(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", "export", "gatekeeper", "--registry", examples("registry.yaml"), "-o", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "notes.txt") {
		t.Errorf("exit %d, stderr %q; want 1 naming notes.txt", r.code, r.stderr)
	}
	if r := run(t, "", "export", "kyverno", "-o", dir); r.code != 2 {
		t.Errorf("without --registry: exit %d, want 2", r.code)
	}
}
