package configuration

import (
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/clusterview"
)

func TestUnselectedNamesTheTenantNamespacesAWebhookLeavesOut(t *testing.T) {
	built := Options{Catalog: catalog.MustEmbedded()}
	otherLabel := built
	otherLabel.TenantLabel = "capsule.clastix.io/tenant"
	namespaces := []clusterview.NamedLabels{
		{Name: "gas-dev", Labels: clusterview.NewLabels(map[string]string{"tenantguard.io/tenant": "gas"})},
		{Name: "oil-dev", Labels: clusterview.NewLabels(map[string]string{"tenantguard.io/tenant": "oil", "team": "a"})},
		{Name: "oil-prod", Labels: clusterview.NewLabels(map[string]string{"tenantguard.io/tenant": "oil"})},
		{Name: "oil-test", Labels: clusterview.NewLabels(map[string]string{"tenantguard.io/tenant": "oil"})},
	}
	// byName is a configuration whose webhooks select namespaces by name
	// only (kubernetes.io/metadata.name, which listers may not keep), but
	// its break-glass ones, which select nothing.
	byName := Validating(built)
	for i := range byName.Webhooks {
		w := &byName.Webhooks[i]
		w.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"oil-dev", "gas-dev"}}}}
		if breakGlass(w.Name) {
			w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"nothing": "at all"}}
		}
	}
	invalid := Mutating(built)
	invalid.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near"}}}
	byTeam := Mutating(built)
	byTeam.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	// byObject's workload webhook takes only the objects without a label
	// a tenant can set; empty's takes every object.
	byObject, empty := Validating(built), Validating(built)
	for i := range byObject.Webhooks {
		if byObject.Webhooks[i].Name == "workloads.tenantguard.io" {
			byObject.Webhooks[i].ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist}}}
			empty.Webhooks[i].ObjectSelector = &metav1.LabelSelector{}
		}
	}
	both := Mutating(built)
	both.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	both.Webhooks[0].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"checked": "yes"}}
	for _, tt := range []struct {
		name   string
		vwc    *admissionregistrationv1.ValidatingWebhookConfiguration
		mwc    *admissionregistrationv1.MutatingWebhookConfiguration
		want   []string
		leftOf int
	}{
		{"the configurations the builder makes select every tenant namespace", Validating(built), Mutating(built), nil, 0},
		{"a tenant label other than the registry's leaves every tenant namespace out of the workload webhooks",
			Validating(otherLabel), Mutating(otherLabel), []string{
				"validating workloads.tenantguard.io: 4 of 4 tenant namespaces (gas-dev, oil-dev, oil-prod, ...)",
				"validating every-kind.tenantguard.io: 4 of 4 tenant namespaces (gas-dev, oil-dev, oil-prod, ...)",
				"mutating workloads.tenantguard.io: 4 of 4 tenant namespaces (gas-dev, oil-dev, oil-prod, ...)",
			}, 4},
		{"a selector by name matches the name's own label; the break-glass webhooks are not judged",
			byName, nil, []string{
				"validating namespaces.tenantguard.io: 2 of 4 tenant namespaces (oil-prod, oil-test)",
				"validating workloads.tenantguard.io: 2 of 4 tenant namespaces (oil-prod, oil-test)",
				"validating every-kind.tenantguard.io: 2 of 4 tenant namespaces (oil-prod, oil-test)",
			}, 2},
		{"what several webhooks leave out counts once", byName, byTeam, []string{
			"validating namespaces.tenantguard.io: 2 of 4 tenant namespaces (oil-prod, oil-test)",
			"validating workloads.tenantguard.io: 2 of 4 tenant namespaces (oil-prod, oil-test)",
			"validating every-kind.tenantguard.io: 2 of 4 tenant namespaces (oil-prod, oil-test)",
			"mutating namespaces.tenantguard.io: 3 of 4 tenant namespaces (gas-dev, oil-prod, oil-test)",
		}, 3},
		{"a selector that is not valid leaves every tenant namespace out", nil, invalid, []string{
			`mutating namespaces.tenantguard.io: its namespaceSelector is not valid ("Near" is not a valid label selector operator)`,
		}, 4},
		{"an objectSelector is said, as the tenants label their own objects, but leaves no namespace out", byObject, nil, []string{
			"validating workloads.tenantguard.io: its objectSelector (!skip) lets a tenant keep any object from it by the object's labels",
		}, 0},
		{"an empty objectSelector takes every object", empty, nil, nil, 0},
		{"a webhook with both selectors gets a line for each", nil, both, []string{
			"mutating namespaces.tenantguard.io: 3 of 4 tenant namespaces (gas-dev, oil-prod, oil-test)",
			"mutating namespaces.tenantguard.io: its objectSelector (checked=yes) lets a tenant keep any object from it by the object's labels",
		}, 3},
		{"configurations not installed leave nothing out: Unrouted says what they do not send", nil, nil, nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, n := Unselected(tt.vwc, tt.mwc, namespaces)
			if !slices.Equal(got, tt.want) {
				t.Errorf("unselected\n%q\nwant\n%q", got, tt.want)
			}
			if n != tt.leftOf {
				t.Errorf("%d namespaces left out, want %d", n, tt.leftOf)
			}
		})
	}
}
