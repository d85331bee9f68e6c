package tests

import (
	"slices"
	"testing"

	"github.com/open-policy-agent/frameworks/constraint/pkg/client/reviews"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/target"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// TestGatekeeperEnforcesEachRuleOfAFamilyInItsMode has a registry put one
// rule of the services family in warn mode: Gatekeeper, with the exported
// library in its constraint framework, warns about it and denies for the
// other on one request that breaks both.
func TestGatekeeperEnforcesEachRuleOfAFamilyInItsMode(t *testing.T) {
	snap, err := registry.Parse("registry.yaml", []byte("apiVersion: tenantguard.io/v1\nkind: TenantRegistry\nsettings:\n  enforcement: {service-type: warn}\ntenants:\n  - name: oil\n    owners: [{kind: User, name: alice}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	lib, err := export.Gatekeeper(snap, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	client := gatekeeperClient(t, lib)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "oil-dev", Labels: map[string]string{registry.DefaultTenantLabel: "oil"}}}
	req := &admissionv1.AdmissionRequest{
		UID: "u", Operation: admissionv1.Create, Namespace: "oil-dev", Name: "web",
		Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Service"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "services"},
		Object:   runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"oil-dev"},"spec":{"type":"NodePort","externalIPs":["10.0.0.1"],"ports":[{"port":80}]}}`)},
	}
	nsObject := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "oil-dev", "labels": map[string]any{registry.DefaultTenantLabel: "oil"}}}
	resp, err := client.Review(t.Context(), &target.AugmentedReview{AdmissionRequest: req, Namespace: ns, IsAdmission: true},
		reviews.EnforcementPoint(webhookEnforcementPoint), reviews.Namespace(nsObject))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range resp.Results() {
		got = append(got, r.EnforcementAction+" "+ruleOf(r.Msg))
	}
	slices.Sort(got)
	if want := []string{"deny external-ips", "warn service-type"}; !slices.Equal(got, want) {
		t.Errorf("results %v, want %v", got, want)
	}
}
