package configuration

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/rego"
	"github.com/tenantguard/tenantguard/tests/fixtures"
)

// withFamily is the embedded library with the configmaps family of the
// tests' fixtures (a rule family of one's own) as an overlay.
func withFamily(t *testing.T) *catalog.Catalog {
	t.Helper()
	c, err := catalog.LoadOverlay(rego.FS(), os.DirFS(filepath.Join(fixtures.Dir(), "family", "configmaps")))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestUnroutedNamesWhatOnlyTheCatchAllSends(t *testing.T) {
	embedded := catalog.MustEmbedded()
	counted := []schema.GroupResource{{Resource: "pods"}, {Group: "example.com", Resource: "widgets"}}
	built := Options{Catalog: embedded, QuotaResources: counted}
	ignore := admissionregistrationv1.Ignore
	failingOpen := built
	failingOpen.FailurePolicy = &ignore
	withoutWorkloads := Validating(built)
	withoutWorkloads.Webhooks = slices.DeleteFunc(withoutWorkloads.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return w.Name == "workloads.tenantguard.io"
	})
	all := admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{"*"},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}},
	}
	everything := &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{{Rules: []admissionregistrationv1.RuleWithOperations{all}}}}
	everythingMutated := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{Rules: []admissionregistrationv1.RuleWithOperations{all}}}}
	for _, tt := range []struct {
		name     string
		vwc      *admissionregistrationv1.ValidatingWebhookConfiguration
		mwc      *admissionregistrationv1.MutatingWebhookConfiguration
		cat      *catalog.Catalog
		counted  []schema.GroupResource
		has, not []string
		none     bool
	}{
		{name: "the configurations the builder makes route everything", vwc: Validating(built), mwc: Mutating(built), cat: embedded, counted: counted, none: true},
		{name: "a family of one's own whose kind the configurations leave out: its creates and updates, which the catch-all webhook sends failing open",
			vwc: Validating(built), mwc: Mutating(built), cat: withFamily(t), counted: counted,
			has: []string{"validating configmaps CREATE", "validating configmaps UPDATE"}, not: []string{"validating pods CREATE"}},
		{name: "a resource counted since the configurations were made: its creates",
			vwc: Validating(Options{Catalog: embedded}), mwc: Mutating(built), cat: embedded, counted: counted,
			has: []string{"validating example.com/widgets CREATE"}, not: []string{"validating pods CREATE"}},
		{name: "webhooks failing open by choice (failurePolicy Ignore) route as configured",
			vwc: Validating(failingOpen), mwc: Mutating(failingOpen), cat: embedded, counted: counted, none: true},
		{name: "the catch-all and break-glass webhooks route nothing: without the workloads webhook, what it sent is listed",
			vwc: withoutWorkloads, mwc: Mutating(built), cat: embedded, counted: counted,
			has: []string{"validating pods CREATE", "validating apps/deployments UPDATE", "validating pods/ephemeralcontainers UPDATE"}, not: []string{"mutating pods CREATE", "validating namespaces CREATE"}},
		{name: "configurations not installed route nothing",
			cat: embedded, has: []string{"validating namespaces CREATE", "mutating pods CREATE"}},
		{name: "wildcards route every group, resource, subresource and operation",
			vwc: everything, mwc: everythingMutated, cat: withFamily(t), counted: counted, none: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Unrouted(tt.vwc, tt.mwc, tt.cat, tt.counted)
			if tt.none && len(got) > 0 {
				t.Fatalf("unrouted %v, want none", got)
			}
			for _, want := range tt.has {
				if !slices.Contains(got, want) {
					t.Errorf("unrouted %v, want %q among them", got, want)
				}
			}
			for _, routed := range tt.not {
				if slices.Contains(got, routed) {
					t.Errorf("unrouted %v lists %q", got, routed)
				}
			}
		})
	}
}

func TestSendsMatchesResourcesAsTheAPIServerDoes(t *testing.T) {
	rule := func(resources ...string) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, Resources: resources},
		}}
	}
	for _, tt := range []struct {
		name     string
		rules    []admissionregistrationv1.RuleWithOperations
		resource string
		want     bool
	}{
		{"a resource named", rule("pods"), "pods", true},
		{"not its subresource", rule("pods"), "pods/status", false},
		{"* is every resource", rule("*"), "services", true},
		{"but no subresource", rule("*"), "pods/status", false},
		{"pods/* is every subresource of pods", rule("pods/*"), "pods/ephemeralcontainers", true},
		{"and pods", rule("pods/*"), "pods", true},
		{"but no other resource", rule("pods/*"), "services", false},
		{"*/status is every resource's status", rule("*/status"), "namespaces/status", true},
		{"*/* is everything", rule("*/*"), "pods", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := sends(tt.rules, "", tt.resource, "UPDATE"); got != tt.want {
				t.Errorf("sends %s: %v, want %v", tt.resource, got, tt.want)
			}
		})
	}
	if sends(rule("pods"), "apps", "pods", "UPDATE") || sends(rule("pods"), "", "pods", "CREATE") {
		t.Error("a rule of the core group's updates sends another group's or a create")
	}
}
