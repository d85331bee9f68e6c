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

// selectorHook is a webhook's kind, name and selectors.
type selectorHook struct {
	kind, name       string
	selector, object *metav1.LabelSelector
}

// selectorHooks are the webhooks that judge tenants' requests, with their
// selectors, in the configurations' order: the catch-all webhook too, the
// only one that sends the kinds the rules judging every kind see, not the
// break-glass ones, which leave the tenant namespaces to the others.
func selectorHooks(vwc *admissionregistrationv1.ValidatingWebhookConfiguration, mwc *admissionregistrationv1.MutatingWebhookConfiguration) []selectorHook {
	var hooks []selectorHook
	if vwc != nil {
		for _, w := range vwc.Webhooks {
			hooks = append(hooks, selectorHook{"validating", w.Name, w.NamespaceSelector, w.ObjectSelector})
		}
	}
	if mwc != nil {
		for _, w := range mwc.Webhooks {
			hooks = append(hooks, selectorHook{"mutating", w.Name, w.NamespaceSelector, w.ObjectSelector})
		}
	}
	return slices.DeleteFunc(hooks, func(h selectorHook) bool { return breakGlass(h.name) })
}

// leavesOut returns the names of the tenant namespaces a webhook's
// namespaceSelector does not select (every one, for a selector that is not
// valid), and what to say of it ("" when it leaves none out).
func (h selectorHook) leavesOut(namespaces []clusterview.NamedLabels) (left []string, says string) {
	left, err := h.namespacesLeftOut(namespaces)
	switch {
	case err != nil:
		return left, fmt.Sprintf("its namespaceSelector is not valid (%v)", err)
	case len(left) > 0:
		named := strings.Join(left[:min(len(left), examples)], ", ")
		if len(left) > examples {
			named += ", ..."
		}
		return left, fmt.Sprintf("%d of %d tenant namespaces (%s)", len(left), len(namespaces), named)
	}
	return nil, ""
}

// namespacesLeftOut returns the names of the namespaces a webhook's
// namespaceSelector does not select (none when it has none): every one,
// with the error, for a selector that is not valid.
func (h selectorHook) namespacesLeftOut(namespaces []clusterview.NamedLabels) ([]string, error) {
	if h.selector == nil {
		return nil, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(h.selector)
	var left []string
	for _, ns := range namespaces {
		if err != nil || !selector.Matches(namedLabels{ns.Name, ns.Labels}) {
			left = append(left, ns.Name)
		}
	}
	return left, err
}

// Selection is what the selectors of the webhooks that judge tenants'
// requests (not the break-glass ones) leave out of them (Unselected).
type Selection struct {
	// Namespaces has a line per webhook whose namespaceSelector leaves out
	// tenant namespaces, whose requests are then never judged, in the
	// configurations' order: "validating workloads.tenantguard.io: 2 of 5
	// tenant namespaces (oil-dev, oil-prod)". The chart's tenantLabel set
	// to another label than the registry's does that, as does a selector
	// edited by hand. LeftOut is how many tenant namespaces some webhook
	// leaves out: every one, for a selector that is not valid, which the
	// API server would refuse.
	Namespaces []string
	LeftOut    int
	// Objects has a line per objectSelector that is not empty, with the
	// webhooks that have it: "checked=yes: validating
	// namespaces.tenantguard.io, mutating namespaces.tenantguard.io". The
	// tenants set their objects' labels, so such a selector lets them keep
	// any object from those webhooks; the chart's webhook.objectSelector is
	// meant for objects tenants cannot create, so these are said, not
	// counted.
	Objects []string
}

// Unselected works out the Selection of the installed configurations over
// the tenant namespaces.
func Unselected(vwc *admissionregistrationv1.ValidatingWebhookConfiguration, mwc *admissionregistrationv1.MutatingWebhookConfiguration, namespaces []clusterview.NamedLabels) Selection {
	var sel Selection
	left := map[string]bool{}
	var selectors []string           // the objectSelectors, in order
	hooksOf := map[string][]string{} // their webhooks
	for _, h := range selectorHooks(vwc, mwc) {
		names, says := h.leavesOut(namespaces)
		if says != "" {
			sel.Namespaces = append(sel.Namespaces, fmt.Sprintf("%s %s: %s", h.kind, h.name, says))
		}
		for _, n := range names {
			left[n] = true
		}
		if o := h.object; o != nil && (len(o.MatchLabels) > 0 || len(o.MatchExpressions) > 0) {
			text := metav1.FormatLabelSelector(o)
			if hooksOf[text] == nil {
				selectors = append(selectors, text)
			}
			hooksOf[text] = append(hooksOf[text], h.kind+" "+h.name)
		}
	}
	for _, text := range selectors {
		sel.Objects = append(sel.Objects, text+": "+strings.Join(hooksOf[text], ", "))
	}
	sel.LeftOut = len(left)
	return sel
}
