package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func examples(name string) string { return filepath.Join("..", "..", "examples", name) }

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(args, strings.NewReader(stdin), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReviewExitCodesAndOutput(t *testing.T) {
	reg, cluster := examples("registry.yaml"), examples("cluster.yaml")
	tests := []struct {
		name       string
		args       []string
		stdin      string
		code       int
		stdout     []string
		stderrLine string
	}{
		{"an allowed request exits 0 with its patch", []string{"review", "--registry", reg, "--objects", cluster, examples("requests/pod-allowed.yaml")}, "", 0, []string{`"allowed": true`, `"patchType": "JSONPatch"`}, ""},
		{"a denied request exits 1 with every reason", []string{"review", "--registry", reg, "--objects", cluster, examples("requests/pod-hostnetwork.yaml")}, "", 1, []string{`"allowed": false`, "[host-network]", "[host-path]", "[priority-class]", `"code": 403`}, ""},
		{"the request can come from stdin", []string{"review", "--registry", reg, "--objects", cluster, "-"}, mustRead(t, examples("requests/namespace-create.yaml")), 0, []string{`"uid": "3c8c2d55-9a3e-4f7e-a1d2-8e5d1c2b3a40"`}, ""},
		{"a body that is not JSON exits 2", []string{"review", "--registry", reg}, "{not json", 2, nil, "tenantguard: <stdin>: bad AdmissionReview: not an AdmissionReview"},
		{"a review without a request exits 2", []string{"review", "--registry", reg}, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, 2, nil, "tenantguard: <stdin>: bad AdmissionReview: the AdmissionReview has no request"},
		{"an unknown review version exits 2", []string{"review", "--registry", reg}, `{"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview","request":{}}`, 2, nil, "expected apiVersion admission.k8s.io/v1"},
		{"a missing request file exits 2", []string{"review", "--registry", reg, "/nonexistent.json"}, "", 2, nil, "tenantguard: reading the request"},
		{"a missing objects file exits 2", []string{"review", "--registry", reg, "--objects", "/nonexistent.yaml", "-"}, "", 2, nil, "tenantguard: reading objects"},
		{"the registry flag is required", []string{"review", "-"}, "", 2, nil, `required flag(s) "registry" not set`},
		{"an unknown flag exits 2", []string{"review", "--bogus"}, "", 2, nil, "unknown flag: --bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.stdin, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", r.code, tt.code, r.stderr)
			}
			for _, want := range tt.stdout {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
				}
			}
			if tt.stderrLine != "" {
				if !strings.Contains(r.stderr, tt.stderrLine) || strings.Count(r.stderr, "\n") != 1 {
					t.Errorf("stderr = %q, want one line containing %q", r.stderr, tt.stderrLine)
				}
				if r.stdout != "" {
					t.Errorf("bad input printed to stdout: %s", r.stdout)
				}
			}
			if tt.code < 2 {
				var review map[string]any
				if err := json.Unmarshal([]byte(r.stdout), &review); err != nil || review["response"] == nil {
					t.Errorf("stdout is not an AdmissionReview response: %v\n%s", err, r.stdout)
				}
			}
		})
	}
}

func TestReviewWithABadRegistryExits2ListingEveryProblem(t *testing.T) {
	bad := writeFile(t, "bad.yaml", "apiVersion: tenantguard.io/v1\nkind: TenantRegistry\nsettings: {colour: blue}\ntenants:\n  - {name: Oil}\n  - {name: a, quotas: {pods: -1}}\n")
	r := run(t, "", "review", "--registry", bad, examples("requests/pod-allowed.yaml"))
	if r.code != 2 {
		t.Fatalf("exit %d", r.code)
	}
	for _, want := range []string{"(3 problems)", `bad.yaml:3: unknown field "colour"`, "bad.yaml:5: tenants[0].name", "bad.yaml:6: tenants[1].quotas.pods"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

func TestWarnAndDryRunModesReachTheResponse(t *testing.T) {
	reg := strings.Replace(mustRead(t, examples("registry.yaml")), "      protectedLabels:", "      enforcement: {host-network: warn, host-path: dryrun, priority-class: warn}\n      protectedLabels:", 1)
	r := run(t, "", "review", "--registry", writeFile(t, "r.yaml", reg), "--objects", examples("cluster.yaml"), examples("requests/pod-hostnetwork.yaml"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{`"warnings": [`, "[host-network] hostNetwork", `"dryrun-host-path": "[host-path]`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "dryrun: [host-path]") {
		t.Errorf("the dryrun violation is not recorded on stderr: %q", r.stderr)
	}
}

func TestRegistryValidate(t *testing.T) {
	if r := run(t, "", "registry", "validate", examples("registry.yaml")); r.code != 0 || !strings.Contains(r.stdout, "valid registry with 2 tenants") {
		t.Errorf("valid registry: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	bad := writeFile(t, "bad.yaml", "apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants: [{name: a}, {name: a}]\n")
	if r := run(t, "", "registry", "validate", bad); r.code != 1 || !strings.Contains(r.stdout, `tenant "a" is already defined`) {
		t.Errorf("invalid registry: exit %d, %q", r.code, r.stdout)
	}
	if r := run(t, "", "registry", "validate", "/nonexistent"); r.code != 2 {
		t.Errorf("missing file: exit %d", r.code)
	}
}

func TestVersion(t *testing.T) {
	if r := run(t, "", "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "tenantguard dev") {
		t.Errorf("version: %d %q", r.code, r.stdout)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestReviewTextOutputIsForPeople(t *testing.T) {
	r := run(t, "", "review", "-o", "text", "--registry", examples("registry.yaml"), "--objects", examples("cluster.yaml"), examples("requests/namespace-stranger.yaml"))
	want := "denied\n  deny   [namespace-ownership] \"bob\" owns no tenant, so cannot create namespace \"oil-bob\" in tenant \"oil\"; ask a platform administrator to add you as an owner\n"
	if r.code != 1 || r.stdout != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", r.code, r.stdout, want)
	}
	r = run(t, "", "review", "-o", "yaml", "--registry", examples("registry.yaml"), "--objects", examples("cluster.yaml"), examples("requests/namespace-stranger.yaml"))
	if r.code != 2 || !strings.Contains(r.stderr, "yaml") {
		t.Errorf("an unknown output format must exit 2 and name it, got %d, stderr %q", r.code, r.stderr)
	}
}

func TestRulesSayWhichKindsARuleSeesInFewerOperations(t *testing.T) {
	r := run(t, "", "rules", "-o", "json")
	var view struct {
		Rules []struct {
			ID             string              `json:"id"`
			KindOperations map[string][]string `json:"kindOperations"`
		} `json:"rules"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &view); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %v: %s", r.code, err, r.stderr)
	}
	for _, rule := range view.Rules {
		want := map[string][]string(nil)
		if rule.ID == "tenant-resource-quota" {
			want = map[string][]string{"resource.k8s.io/ResourceClaim": {"CREATE"}}
		}
		if !reflect.DeepEqual(rule.KindOperations, want) {
			t.Errorf("%s: kindOperations %v, want %v", rule.ID, rule.KindOperations, want)
		}
	}
	table := run(t, "", "rules").stdout
	markdown := run(t, "", "rules", "-o", "markdown").stdout
	for text, want := range map[string]string{table: " CREATE,UPDATE(resource.k8s.io/ResourceClaim:CREATE) ", markdown: "| CREATE, UPDATE (`resource.k8s.io/ResourceClaim`: CREATE) |"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, text)
		}
	}
}

func TestRulesSayWhichRulesTheAuditChecks(t *testing.T) {
	// The audit leaves out the rules about the change itself (METADATA
	// custom: audit: false); every other rule it checks.
	notAudited := map[string]bool{"managed-resource": true, "tenant-cordoned": true, "namespace-deletion": true, "namespace-prefix": true, "protected-metadata": true}
	r := run(t, "", "rules", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var view struct {
		Rules []map[string]any `json:"rules"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &view); err != nil {
		t.Fatal(err)
	}
	if len(view.Rules) < 10 {
		t.Fatalf("%d rules listed", len(view.Rules))
	}
	for _, rule := range view.Rules {
		id, _ := rule["id"].(string)
		audit, ok := rule["audit"].(bool)
		if !ok || audit == notAudited[id] {
			t.Errorf("rule %s: audit %v, want %v", id, rule["audit"], !notAudited[id])
		}
	}
	r = run(t, "", "rules", "-o", "yaml")
	if r.code != 0 || !strings.Contains(r.stdout, "audit: false") || !strings.Contains(r.stdout, "audit: true") {
		t.Errorf("yaml lacks the audit field (exit %d):\n%s", r.code, r.stdout)
	}
	r = run(t, "", "rules")
	lines := strings.Split(r.stdout, "\n")
	if r.code != 0 || !strings.Contains(lines[0], "AUDITED") {
		t.Fatalf("table header %q (exit %d)", lines[0], r.code)
	}
	for _, line := range lines[1:] {
		fields := strings.Fields(line)
		if len(fields) < 6 {
			continue
		}
		// RULE FAMILY KINDS OPERATIONS MUTATES AUDITED ...
		if want := strconv.FormatBool(!notAudited[fields[0]]); fields[5] != want {
			t.Errorf("table row %q: AUDITED %s, want %s", line, fields[5], want)
		}
	}
}
