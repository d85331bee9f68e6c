package configuration

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tenantguard/tenantguard/internal/clusterview"
)

// namedLabels adds kubernetes.io/metadata.name, which the API server sets on
// every namespace and matches selectors against, to labels that may lack it.
type namedLabels struct {
	name string
	labels.Labels
}

func (l namedLabels) Has(key string) bool {
	return key == corev1.LabelMetadataName || l.Labels.Has(key)
}

func (l namedLabels) Get(key string) string {
	v, _ := l.Lookup(key)
	return v
}

func (l namedLabels) Lookup(key string) (string, bool) {
	if key == corev1.LabelMetadataName {
		return l.name, true
	}
	return l.Labels.Lookup(key)
}

// examples is how many namespaces a line of Unselected names.
const examples = 3

// selectorHook is a webhook's kind, name and namespace selector.
type selectorHook struct {
	kind, name string
	selector   *metav1.LabelSelector
}

// selectorHooks are the webhooks that judge tenants' requests and select
// namespaces, in the configurations' order: the catch-all webhook too, the
// only one that sends the kinds the rules judging every kind see, not the
// break-glass ones, which leave the tenant namespaces to the others.
func selectorHooks(vwc *admissionregistrationv1.ValidatingWebhookConfiguration, mwc *admissionregistrationv1.MutatingWebhookConfiguration) []selectorHook {
	var hooks []selectorHook
	if vwc != nil {
		for _, w := range vwc.Webhooks {
			hooks = append(hooks, selectorHook{"validating", w.Name, w.NamespaceSelector})
		}
	}
	if mwc != nil {
		for _, w := range mwc.Webhooks {
			hooks = append(hooks, selectorHook{"mutating", w.Name, w.NamespaceSelector})
		}
	}
	return slices.DeleteFunc(hooks, func(h selectorHook) bool { return breakGlass(h.name) || h.selector == nil })
}

// leavesOut returns the names of the namespaces a webhook's selector does
// not select: every one, with the error, for a selector that is not valid.
func (h selectorHook) leavesOut(namespaces []clusterview.NamedLabels) ([]string, error) {
	selector, err := metav1.LabelSelectorAsSelector(h.selector)
	var left []string
	for _, ns := range namespaces {
		if err != nil || !selector.Matches(namedLabels{ns.Name, ns.Labels}) {
			left = append(left, ns.Name)
		}
	}
	return left, err
}

// Unselected are the webhooks that judge tenants' requests (not the
// break-glass ones) whose namespaceSelector leaves out tenant
// namespaces: the requests in those namespaces are never judged. The
// chart's tenantLabel set to another label than the registry's does that,
// as does a selector edited by hand. One line per webhook, in the
// configurations' order: "validating workloads.tenantguard.io: 2 of 5
// tenant namespaces (oil-dev, oil-prod)"; and how many tenant namespaces
// some webhook leaves out (every one, for a selector that is not valid,
// which the API server would refuse).
func Unselected(vwc *admissionregistrationv1.ValidatingWebhookConfiguration, mwc *admissionregistrationv1.MutatingWebhookConfiguration, namespaces []clusterview.NamedLabels) (lines []string, leftOut int) {
	left := map[string]bool{}
	for _, h := range selectorHooks(vwc, mwc) {
		names, err := h.leavesOut(namespaces)
		switch {
		case err != nil:
			lines = append(lines, fmt.Sprintf("%s %s: its namespaceSelector is not valid (%v)", h.kind, h.name, err))
		case len(names) > 0:
			named := strings.Join(names[:min(len(names), examples)], ", ")
			if len(names) > examples {
				named += ", ..."
			}
			lines = append(lines, fmt.Sprintf("%s %s: %d of %d tenant namespaces (%s)", h.kind, h.name, len(names), len(namespaces), named))
		}
		for _, n := range names {
			left[n] = true
		}
	}
	return lines, len(left)
}
