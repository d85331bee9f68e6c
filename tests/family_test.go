package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/cli"
	"github.com/tenantguard/tenantguard/internal/policydir"
	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/tests/live"
	"github.com/tenantguard/tenantguard/webhook/configuration"
)

// familyRule is the rule of the family the tests add (fixtures/family).
const familyRule = "configmap-secrets"

// familyLibrary is a policy directory as a security team makes one to add
// a rule family: a copy of the library, tests included, plus the family's
// folder (fixtures/family/configmaps: its Rego, its tests, its CEL), and
// nothing else.
func familyLibrary(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := live.CopyFamilyPolicy(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// listedRule is what the test reads of `tenantguard rules -o json`.
type listedRule struct {
	ID, Family string
	Kinds      []string
	Engines    []string
}

// writeReview writes a case's AdmissionReview into a file.
func writeReview(t testing.TB, c *fixtures.Case) string {
	t.Helper()
	body, err := c.Review()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "review.json")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// tenantguard runs the CLI in-process and returns its exit code and output.
func tenantguard(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errs strings.Builder
	code = cli.Run(args, strings.NewReader(""), &out, &errs)
	return code, out.String(), errs.String()
}

// TestARuleFamilyTakesNoGo adds a rule family in a --policy-dir copy of the
// library and follows it everywhere a rule goes: the opa CLI checks and
// tests it, `tenantguard rules` lists it, the registry's enforcement
// accepts its id, `review` enforces it on both evaluators, the webhook
// configurations route its kind, and every exported engine (the OPA
// bundle, Gatekeeper, Kyverno and ValidatingAdmissionPolicy, from its CEL
// file) agrees with tenantguard's on its corpus. tests/e2e has `serve`
// enforce it through a real API server.
func TestARuleFamilyTakesNoGo(t *testing.T) {
	dir := familyLibrary(t)
	cat, err := policydir.Load(dir)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("the opa CLI formats, checks and tests the library with the family", func(t *testing.T) {
		opa := filepath.Join("..", "bin", "opa")
		for _, args := range [][]string{{"fmt", "--fail", "--list", dir}, {"check", "--strict", dir}, {"test", dir}} {
			if out, err := exec.CommandContext(t.Context(), opa, args...).CombinedOutput(); err != nil {
				t.Errorf("opa %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	})

	t.Run("rules lists it with its kinds and engines", func(t *testing.T) {
		code, out, errs := tenantguard(t, "rules", "--policy-dir", dir, "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var listed struct{ Rules []listedRule }
		if err := json.Unmarshal([]byte(out), &listed); err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(listed.Rules, func(r listedRule) bool { return r.ID == familyRule })
		if i < 0 || len(listed.Rules) != len(catalog.MustEmbedded().IDs())+1 {
			t.Fatalf("%d rules listed, %s at %d", len(listed.Rules), familyRule, i)
		}
		r := listed.Rules[i]
		if r.Family != "configmaps" || !slices.Equal(r.Kinds, []string{"ConfigMap"}) || !slices.Equal(r.Engines, []string{"tenantguard", "opa", "gatekeeper", "kyverno", "vap"}) {
			t.Errorf("listed as %+v", r)
		}
	})

	warnRegistry := filepath.Join(fixtures.Dir(), "family", "registry-warn.yaml")
	t.Run("the registry's enforcement accepts its id with the library, and only with it", func(t *testing.T) {
		if code, out, errs := tenantguard(t, "registry", "validate", "--policy-dir", dir, warnRegistry); code != 0 {
			t.Errorf("with the family: exit %d: %s%s", code, out, errs)
		}
		if code, out, _ := tenantguard(t, "registry", "validate", warnRegistry); code != 1 || !strings.Contains(out, `unknown rule id "`+familyRule+`"`) {
			t.Errorf("with the embedded library: exit %d: %s", code, out)
		}
	})

	t.Run("review enforces it on both evaluators", func(t *testing.T) {
		cases, err := fixtures.LoadFile(filepath.Join("family", "cases.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		denied := writeReview(t, &cases[0])
		allowed := writeReview(t, &cases[1])
		for _, evaluator := range []string{"plan", "topdown"} {
			args := []string{"review", "--policy-dir", dir, "--evaluator", evaluator, "--registry", cases[0].RegistryFile(), "--objects", fixtures.ClusterFile()}
			if code, out, errs := tenantguard(t, append(args, denied)...); code != 1 || !strings.Contains(out, "["+familyRule+"] ConfigMap \\\"db\\\" holds key \\\"DB_PASSWORD\\\"") {
				t.Errorf("%s: a ConfigMap with a password: exit %d: %s%s", evaluator, code, out, errs)
			}
			if code, out, errs := tenantguard(t, append(args, allowed)...); code != 0 {
				t.Errorf("%s: a ConfigMap of settings: exit %d: %s%s", evaluator, code, out, errs)
			}
		}
		if code, out, _ := tenantguard(t, "review", "--registry", cases[0].RegistryFile(), "--objects", fixtures.ClusterFile(), denied); code != 0 {
			t.Errorf("the embedded library knows no such rule, yet: exit %d: %s", code, out)
		}
	})

	t.Run("the webhook configurations route its kind", func(t *testing.T) {
		hooks := configuration.Validating(configuration.Options{URL: "https://x", Catalog: cat}).Webhooks
		routed := func(hooks []admissionregistrationv1.ValidatingWebhook) []admissionregistrationv1.OperationType {
			for _, h := range hooks {
				for _, r := range h.Rules {
					if slices.Contains(r.Resources, "configmaps") && h.Name == "workloads.tenantguard.io" {
						return r.Operations
					}
				}
			}
			return nil
		}
		if ops := routed(hooks); !slices.Equal(ops, []admissionregistrationv1.OperationType{"CREATE", "UPDATE"}) {
			t.Errorf("configmaps routed for %v, want CREATE and UPDATE in tenant namespaces", ops)
		}
		if ops := routed(configuration.Validating(configuration.Options{URL: "https://x"}).Webhooks); ops != nil {
			t.Errorf("the embedded library routes configmaps for %v", ops)
		}
		code, out, _ := tenantguard(t, "rules", "--policy-dir", dir, "-o", "webhook-rules")
		if code != 0 || !strings.Contains(out, "- configmaps") {
			t.Errorf("the chart's webhook rules for the library leave configmaps out: exit %d\n%s", code, out)
		}
	})

	t.Run("every engine agrees with tenantguard's on the family's corpus", func(t *testing.T) {
		cases, err := fixtures.LoadFile(filepath.Join("family", "cases.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		library{catalog: cat, cases: cases, exercise: []string{familyRule}}.agree(t)
	})
}

// TestAFamilyInAnOverlayJoinsTheEmbeddedLibrary adds the same family as an
// overlay (--policy-overlay), its files in one folder as the chart's
// ConfigMap mounts them: the embedded library's rules stand, the family's
// joins them in rules, review and the webhook rules, and an overlay that
// would change one of the library's own packages is refused, naming it.
func TestAFamilyInAnOverlayJoinsTheEmbeddedLibrary(t *testing.T) {
	overlay := t.TempDir()
	if err := live.CopyDir(filepath.Join(fixtures.Dir(), "family", "configmaps"), overlay); err != nil {
		t.Fatal(err)
	}
	t.Run("rules lists the embedded rules and the family's", func(t *testing.T) {
		code, out, errs := tenantguard(t, "rules", "--policy-overlay", overlay, "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var listed struct {
			Library string
			Rules   []listedRule
		}
		if err := json.Unmarshal([]byte(out), &listed); err != nil {
			t.Fatal(err)
		}
		if len(listed.Rules) != len(catalog.MustEmbedded().IDs())+1 || !slices.ContainsFunc(listed.Rules, func(r listedRule) bool { return r.ID == familyRule }) {
			t.Errorf("%d rules listed, want the embedded ones and %s", len(listed.Rules), familyRule)
		}
		if listed.Library != "embedded+"+overlay {
			t.Errorf("library %q", listed.Library)
		}
	})
	t.Run("review enforces it beside the embedded rules, on both evaluators", func(t *testing.T) {
		cases, err := fixtures.LoadFile(filepath.Join("family", "cases.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		denied, allowed := writeReview(t, &cases[0]), writeReview(t, &cases[1])
		for _, evaluator := range []string{"plan", "topdown"} {
			args := []string{"review", "--policy-overlay", overlay, "--evaluator", evaluator, "--registry", cases[0].RegistryFile(), "--objects", fixtures.ClusterFile()}
			if code, out, errs := tenantguard(t, append(args, denied)...); code != 1 || !strings.Contains(out, "["+familyRule+"] ") {
				t.Errorf("%s: a ConfigMap with a password: exit %d: %s%s", evaluator, code, out, errs)
			}
			if code, out, errs := tenantguard(t, append(args, allowed)...); code != 0 {
				t.Errorf("%s: a ConfigMap of settings: exit %d: %s%s", evaluator, code, out, errs)
			}
		}
	})
	t.Run("the webhook rules route its kind", func(t *testing.T) {
		code, out, _ := tenantguard(t, "rules", "--policy-overlay", overlay, "-o", "webhook-rules")
		if code != 0 || !strings.Contains(out, "- configmaps") || !strings.Contains(out, "- pods") {
			t.Errorf("exit %d, want configmaps beside the embedded kinds:\n%s", code, out)
		}
	})
	t.Run("an overlay changing a family of the library is refused", func(t *testing.T) {
		bad := t.TempDir()
		src := "package tenantguard.rules.images\n\nviolations contains {\"id\": \"x\", \"msg\": \"x\"} if false\n"
		if err := os.WriteFile(filepath.Join(bad, "images.rego"), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errs := tenantguard(t, "rules", "--policy-overlay", bad)
		if code != 2 || !strings.Contains(errs, "overlay/images.rego:1: package tenantguard.rules.images is in the library's own tenantguard.rules.images") {
			t.Errorf("exit %d: %s", code, errs)
		}
	})
}
