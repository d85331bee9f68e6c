package cli

import (
	"encoding/json"
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
	if rows[3] != (statusRow{Tenant: "oil", Resource: "requests.cpu", Used: "3", Hard: "6", Percent: 50}) {
		t.Errorf("row %+v", rows[3])
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
