package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenantguard/tenantguard/tests/fixtures"
)

// auditFixture is a file of the audit's fixtures (tests/fixtures/audit).
func auditFixture(name string) string { return filepath.Join(fixtures.Dir(), "audit", name) }

const rerunAudit = "UPDATE_GOLDEN=1 go test ./internal/cli -run TestAudit"

// oilDevNamespace and edgePod are objects for --objects: a namespace of
// tenant oil, and a hostNetwork pod in it.
const (
	oilDevNamespace = `
apiVersion: v1
kind: Namespace
metadata: {name: oil-dev, labels: {tenantguard.io/tenant: oil}}
`
	edgePod = `
apiVersion: v1
kind: Pod
metadata: {name: edge, namespace: oil-dev}
spec:
  hostNetwork: true
  priorityClassName: tenant-low
  containers: [{name: edge, image: nginx}]
`
)

func TestAuditPrintsTheGoldenRows(t *testing.T) {
	cluster := auditFixture("cluster.yaml")
	tests := []struct {
		name   string
		args   []string
		golden string
		code   int
	}{
		{"the registry in force finds what was admitted before its rules, and none of a tenant at its quota", []string{"--registry", filepath.Join(fixtures.Dir(), "registry.yaml")}, "current.table", 1},
		{"a proposed registry finds what it would refuse, as JSON", []string{"--registry", auditFixture("registry-tightened.yaml"), "-o", "json"}, "tightened.json", 1},
		{"a rule in warn mode is reported in its mode, as YAML", []string{"--registry", filepath.Join(fixtures.Dir(), "registry-enforcement.yaml"), "-o", "yaml"}, "enforcement.yaml", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", append([]string{"audit", "--objects", cluster}, tt.args...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", r.code, tt.code, r.stderr)
			}
			fixtures.Golden(t, auditFixture(tt.golden), r.stdout, rerunAudit)
		})
	}
}

func TestAuditExitStatusFollowsFailOn(t *testing.T) {
	reg := filepath.Join(fixtures.Dir(), "registry-enforcement.yaml")
	objects := writeFile(t, "cluster.yaml", oilDevNamespace+"---"+edgePod)
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"a row in warn mode is a violation: exit 1", nil, 1},
		{"--fail-on any is the default", []string{"--fail-on", "any"}, 1},
		{"--fail-on deny lets a row in warn mode pass", []string{"--fail-on", "deny"}, 0},
		{"--fail-on takes any or deny only", []string{"--fail-on", "warn"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", append([]string{"audit", "--registry", reg, "--objects", objects, "-o", "json"}, tt.args...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d (host-network is in warn mode); stdout %s stderr %s", r.code, tt.code, r.stdout, r.stderr)
			}
			if tt.code == 2 {
				return
			}
			var report auditReport
			if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
				t.Fatal(err)
			}
			if report.Objects != 2 || len(report.Violations) != 1 || report.Violations[0].Rule != "host-network" || report.Violations[0].Mode != "warn" {
				t.Fatalf("report %+v, want 2 objects and one host-network row in warn mode", report)
			}
		})
	}
}

func TestAuditRefusesBadInputWithExitTwo(t *testing.T) {
	reg := filepath.Join(fixtures.Dir(), "registry.yaml")
	tests := []struct {
		name       string
		args       []string
		stderrLine string
	}{
		{"a missing objects file", []string{"--registry", reg, "--objects", "/nonexistent.yaml"}, "reading objects"},
		{"objects that are not YAML", []string{"--registry", reg, "--objects", writeFile(t, "bad.yaml", "items: [\n")}, "not YAML"},
		{"an object without a name", []string{"--registry", reg, "--objects", writeFile(t, "noname.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {namespace: oil-dev}\n")}, "metadata.name"},
		{"no objects flag", []string{"--registry", reg}, `required flag(s) "objects" not set`},
		{"an unknown output", []string{"--registry", reg, "--objects", auditFixture("cluster.yaml"), "-o", "csv"}, "--output must be table, json or yaml"},
		{"a missing registry", []string{"--registry", "/nonexistent.yaml", "--objects", auditFixture("cluster.yaml")}, "nonexistent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", append([]string{"audit"}, tt.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.stderrLine) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, tt.stderrLine)
			}
		})
	}
}

func TestAuditNeedsTheNamespacesOfItsObjects(t *testing.T) {
	reg := filepath.Join(fixtures.Dir(), "registry.yaml")
	t.Run("objects without any Namespace are refused, not passed as clean", func(t *testing.T) {
		r := run(t, "", "audit", "--registry", reg, "--objects", writeFile(t, "pods.yaml", edgePod))
		if r.code != 2 || !strings.Contains(r.stderr, "--objects holds no Namespace, so the tenant of its 1 namespaced objects is unknown") {
			t.Fatalf("exit %d, stderr %q; want 2 and the missing namespaces", r.code, r.stderr)
		}
	})
	t.Run("objects in a namespace not given are named in a warning", func(t *testing.T) {
		other := strings.ReplaceAll(edgePod, "oil-dev", "gas-prod")
		r := run(t, "", "audit", "--registry", reg, "--objects", writeFile(t, "cluster.yaml", oilDevNamespace+"---"+edgePod+"---"+other))
		if r.code != 1 || !strings.Contains(r.stderr, `1 object in namespaces --objects does not hold (gas-prod) not audited`) || !strings.Contains(r.stdout, "host-network") {
			t.Fatalf("exit %d, stdout %q, stderr %q; want 1, the oil-dev pod's row and a warning naming gas-prod", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("objects piped on stdin are read whole, however large", func(t *testing.T) {
		big := "\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: oil-dev}\ndata: {blob: " + strings.Repeat("x", 17<<20) + "}\n---"
		r := run(t, oilDevNamespace+big+edgePod, "audit", "--registry", reg, "--objects", "-", "-o", "json")
		var report auditReport
		if err := json.Unmarshal([]byte(r.stdout), &report); err != nil || r.code != 1 || len(report.Violations) != 1 || report.Violations[0].Name != "edge" {
			t.Fatalf("exit %d, rows %+v (%v), stderr %.300s; want 1 and the row of the pod after 17 MiB", r.code, report.Violations, err, r.stderr)
		}
	})
}

func TestAuditLeavesWhatAdministratorsMaySetOnANamespace(t *testing.T) {
	objects := writeFile(t, "cluster.yaml", `
apiVersion: v1
kind: Namespace
metadata:
  name: payments
  labels: {tenantguard.io/tenant: oil, pod-security.kubernetes.io/enforce: restricted}
`)
	r := run(t, "", "audit", "--registry", filepath.Join(fixtures.Dir(), "registry.yaml"), "--objects", objects)
	if r.code != 0 || !strings.Contains(r.stdout, "1 object audited: 0 violations") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want no row for a namespace named and labelled as administrators may", r.code, r.stdout, r.stderr)
	}
}

// TestAuditTheDocumentedExampleIsTheOutput: docs/cli.md shows the audit of
// the fixtures as the command prints it.
func TestAuditTheDocumentedExampleIsTheOutput(t *testing.T) {
	doc := mustRead(t, filepath.Join("..", "..", "docs", "cli.md"))
	r := run(t, "", "audit", "--registry", filepath.Join(fixtures.Dir(), "registry.yaml"), "--objects", auditFixture("cluster.yaml"))
	if r.code != 1 || !strings.Contains(r.stdout, " violations, ") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1 and the rows of the fixtures' violations", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(doc, r.stdout) {
		t.Errorf("docs/cli.md lacks the audit's output:\n%s", r.stdout)
	}
}

// TestTheAuditsExampleGetsWhatTheDocumentedRecipeGets: the command's help
// gives docs/cli.md's recipe, which a test holds to the kinds the audit
// checks (internal/audit), line for line.
func TestTheAuditsExampleGetsWhatTheDocumentedRecipeGets(t *testing.T) {
	doc := mustRead(t, filepath.Join("..", "..", "docs", "cli.md"))
	_, recipes, _ := strings.Cut(doc, "### Recipes")
	recipes, _, _ = strings.Cut(recipes, "\n### ")
	example := newAuditCommand().Example
	gets := 0
	for line := range strings.SplitSeq(recipes, "\n") {
		if !strings.HasPrefix(line, "kubectl get ") || strings.Contains(line, "configmap") {
			continue
		}
		gets++
		if !strings.Contains(example, "  "+line+"\n") {
			t.Errorf("the audit command's example lacks the recipe's\n%s", line)
		}
	}
	if gets == 0 {
		t.Fatal("docs/cli.md's recipes have no kubectl get")
	}
}

func TestAuditCountsReadAsEnglish(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 violations"}, {1, "1 violation"}, {2, "2 violations"}} {
		if got := counted(c.n, "violation"); got != c.want {
			t.Errorf("counted(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
