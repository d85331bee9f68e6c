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
	// both's webhooks all have one objectSelector, and its first a
	// namespaceSelector too.
	both := Mutating(built)
	both.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	for i := range both.Webhooks {
		both.Webhooks[i].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"checked": "yes"}}
	}
	for _, tt := range []struct {
		name    string
		vwc     *admissionregistrationv1.ValidatingWebhookConfiguration
		mwc     *admissionregistrationv1.MutatingWebhookConfiguration
		want    []string
		leftOf  int
		objects []string
	}{
		{"the configurations the builder makes select every tenant namespace", Validating(built), Mutating(built), nil, 0, nil},
		{"a tenant label other than the registry's leaves every tenant namespace out of the workload webhooks",
			Validating(otherLabel), Mutating(otherLabel), []string{
				"validating workloads.tenantguard.io: 4 of 4 tenant namespaces (gas-dev, oil-dev, oil-prod, ...)",
				"validating every-kind.tenantguard.io: 4 of 4 tenant namespaces (gas-dev, oil-dev, oil-prod, ...)",
				"mutating workloads.tenantguard.io: 4 of 4 tenant namespaces (gas-dev, oil-dev, oil-prod, ...)",
			}, 4, nil},
		{"a selector by name matches the name's own label; the break-glass webhooks are not judged",
			byName, nil, []string{
				"validating namespaces.tenantguard.io: 2 of 4 tenant namespaces (oil-prod, oil-test)",
				"validating workloads.tenantguard.io: 2 of 4 tenant namespaces (oil-prod, oil-test)",
				"validating every-kind.tenantguard.io: 2 of 4 tenant namespaces (oil-prod, oil-test)",
			}, 2, nil},
		{"what several webhooks leave out counts once", byName, byTeam, []string{
			"validating namespaces.tenantguard.io: 2 of 4 tenant namespaces (oil-prod, oil-test)",
			"validating workloads.tenantguard.io: 2 of 4 tenant namespaces (oil-prod, oil-test)",
			"validating every-kind.tenantguard.io: 2 of 4 tenant namespaces (oil-prod, oil-test)",
			"mutating namespaces.tenantguard.io: 3 of 4 tenant namespaces (gas-dev, oil-prod, oil-test)",
		}, 3, nil},
		{"a selector that is not valid leaves every tenant namespace out", nil, invalid, []string{
			`mutating namespaces.tenantguard.io: its namespaceSelector is not valid ("Near" is not a valid label selector operator)`,
		}, 4, nil},
		{"an objectSelector is said, as the tenants label their own objects, but leaves no namespace out", byObject, nil, nil, 0, []string{
			"!skip: validating workloads.tenantguard.io",
		}},
		{"an empty objectSelector takes every object", empty, nil, nil, 0, nil},
		{"an objectSelector is said once with the webhooks that have it, beside what a namespaceSelector leaves out", byObject, both, []string{
			"mutating namespaces.tenantguard.io: 3 of 4 tenant namespaces (gas-dev, oil-prod, oil-test)",
		}, 3, []string{
			"!skip: validating workloads.tenantguard.io",
			"checked=yes: mutating namespaces.tenantguard.io, mutating workloads.tenantguard.io",
		}},
		{"configurations not installed leave nothing out: Unrouted says what they do not send", nil, nil, nil, 0, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Unselected(tt.vwc, tt.mwc, namespaces)
			if !slices.Equal(got.Namespaces, tt.want) {
				t.Errorf("unselected\n%q\nwant\n%q", got.Namespaces, tt.want)
			}
			if got.LeftOut != tt.leftOf {
				t.Errorf("%d namespaces left out, want %d", got.LeftOut, tt.leftOf)
			}
			if !slices.Equal(got.Objects, tt.objects) {
				t.Errorf("object selectors\n%q\nwant\n%q", got.Objects, tt.objects)
			}
		})
	}
}
