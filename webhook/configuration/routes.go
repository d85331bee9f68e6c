package configuration

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/catalog"
)

// Unrouted are the requests a library's rules must see (with the creates of
// the resources the registry counts) that no webhook of the installed
// configurations sends but the catch-all and break-glass ones, which fail
// open whatever the configured failure policy: the rules never judge them,
// or judge them only while tenantguard answers. A library changed without
// its webhook rules (a rule family of one's own, an upgrade whose
// configurations were left as they were) is found so. One line each,
// sorted: "validating apps/deployments UPDATE". A configuration not
// installed (nil) routes nothing.
func Unrouted(vwc *admissionregistrationv1.ValidatingWebhookConfiguration, mwc *admissionregistrationv1.MutatingWebhookConfiguration, cat *catalog.Catalog, counted []schema.GroupResource) []string {
	o := Options{Catalog: cat, QuotaResources: counted}
	o.defaults()
	var validating, mutating [][]admissionregistrationv1.RuleWithOperations
	if vwc != nil {
		for _, w := range vwc.Webhooks {
			if judges(w.Name) {
				validating = append(validating, w.Rules)
			}
		}
	}
	if mwc != nil {
		for _, w := range mwc.Webhooks {
			if judges(w.Name) {
				mutating = append(mutating, w.Rules)
			}
		}
	}
	var out []string
	for _, c := range []struct {
		name  string
		rules [][]admissionregistrationv1.RuleWithOperations
	}{{"validating", validating}, {"mutating", mutating}} {
		namespaces, workloads := o.routes(c.name == "mutating")
		for _, r := range append(namespaces, workloads...) {
			for _, op := range r.Operations {
				if !slices.ContainsFunc(c.rules, func(rules []admissionregistrationv1.RuleWithOperations) bool {
					return sends(rules, r.Group, r.Resource, op)
				}) {
					out = append(out, fmt.Sprintf("%s %s %s", c.name, groupResource(r.Group, r.Resource), op))
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// judges reports whether a webhook of that name sends the requests of the
// rules that route them with the failure policy configured: not the
// catch-all webhook (EveryKindName), nor a break-glass one.
func judges(name string) bool {
	return name != EveryKindName+".tenantguard.io" && !breakGlass(name)
}

// breakGlass reports whether a webhook of that name is a break-glass one.
func breakGlass(name string) bool { return strings.Contains(name, "."+breakGlassInfix) }

// sends reports whether webhook rules send the operation op on the resource
// (resource or resource/subresource) of group, as the API server matches
// them (its admission rules.Matcher): "*" is every group, operation and
// resource (not subresource), "pods/*" pods and every subresource of pods,
// "*/*" everything, "*/status" the status of every resource.
func sends(rules []admissionregistrationv1.RuleWithOperations, group, resource, op string) bool {
	res, sub, _ := strings.Cut(resource, "/")
	matches := func(pattern string) bool {
		pres, psub, _ := strings.Cut(pattern, "/")
		return (pres == "*" || pres == res) && (psub == "*" || psub == sub)
	}
	return slices.ContainsFunc(rules, func(r admissionregistrationv1.RuleWithOperations) bool {
		return slices.ContainsFunc(r.Operations, func(o admissionregistrationv1.OperationType) bool { return o == "*" || string(o) == op }) &&
			(slices.Contains(r.APIGroups, "*") || slices.Contains(r.APIGroups, group)) &&
			slices.ContainsFunc(r.Resources, matches)
	})
}

// groupResource writes a route as group/resource ("pods" for the core group).
func groupResource(group, resource string) string {
	if group == "" {
		return resource
	}
	return group + "/" + resource
}
