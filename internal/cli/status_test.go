package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStatusShowsEveryTenantWideLimitWithItsUse(t *testing.T) {
	r := run(t, "", "status", "--registry", examples("registry.yaml"), "--objects", examples("cluster.yaml"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// cluster.yaml: oil's two pods of 1500m and 2Gi, its 20Gi claim.
	for _, want := range [][]string{
		{"TENANT", "RESOURCE", "USED", "HARD", "USE"},
		{"oil", "namespaces", "2", "3", "66.6%"},
		{"oil", "pods", "2", "20", "10.0%"},
		{"oil", "requests.cpu", "3", "6", "50.0%"},
		{"oil", "requests.memory", "4Gi", "12Gi", "33.3%"},
		{"oil", "requests.storage", "20Gi", "50Gi", "40.0%"},
		{"gas", "services", "1", "4", "25.0%"},
	} {
		found := false
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.Join(strings.Fields(line), " ") == strings.Join(want, " ") {
				found = true
			}
		}
		if !found {
			t.Errorf("no line %v in:\n%s", want, r.stdout)
		}
	}
	r = run(t, "", "status", "--registry", examples("registry.yaml"), "--objects", examples("cluster.yaml"), "-o", "json")
	var rows []statusRow
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 8 {
		t.Fatalf("-o json: %d rows, %v:\n%s", len(rows), err, r.stdout)
	}
	if r := rows[3]; r.Tenant != "oil" || r.Resource != "requests.cpu" || r.Used != "3" || r.Hard != "6" || r.Percent == nil || *r.Percent != 50 {
		t.Errorf("row %+v", r)
	}
}

// TestStatusShowsALimitOfNothingAsOverWhenUsed: a limit of 0 (a tenant
// frozen, or a kind it may not have) has no percentage: the table says
// "over" when the tenant has some anyway, "-" otherwise, and JSON null.
func TestStatusShowsALimitOfNothingAsOverWhenUsed(t *testing.T) {
	data, err := os.ReadFile(examples("registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(data), "persistentvolumeclaims: 5", "persistentvolumeclaims: 0", 1)
	doc = strings.Replace(doc, "services: 4", "services: 4\n          secrets: 0", 1)
	reg := filepath.Join(t.TempDir(), "registry.yaml")
	if err := os.WriteFile(reg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", "status", "--registry", reg, "--objects", examples("cluster.yaml"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := map[string]bool{}
	for _, line := range strings.Split(r.stdout, "\n") {
		lines[strings.Join(strings.Fields(line), " ")] = true
	}
	for _, want := range []string{"oil persistentvolumeclaims 1 0 over", "gas secrets 0 0 -"} {
		if !lines[want] {
			t.Errorf("no line %q in:\n%s", want, r.stdout)
		}
	}
	r = run(t, "", "status", "--registry", reg, "--objects", examples("cluster.yaml"), "-o", "json")
	if !strings.Contains(r.stdout, `"resource": "persistentvolumeclaims",
    "used": "1",
    "hard": "0",
    "percent": null`) {
		t.Errorf("-o json does not give the claims' limit of 0 a null percent:\n%s", r.stdout)
	}
}

func TestStatusRefusesHalfAnOfflineCluster(t *testing.T) {
	reg, objects := examples("registry.yaml"), examples("cluster.yaml")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--registry", reg}, "--registry and --objects go together"},
		{[]string{"status", "--objects", objects}, "--registry and --objects go together"},
		{[]string{"status", "--registry", reg, "--objects", objects, "--kubeconfig", "k"}, "not both"},
	} {
		if r := run(t, "", tt.args...); r.code != 2 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 (usage) and %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}
