package configuration

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/tenantguard/tenantguard/internal/catalog"
)

// EveryKindName is the first label of the catch-all webhook, which sends
// every namespaced kind in tenant namespaces to the rules that judge them
// all (a cordoned tenant's).
const EveryKindName = "every-kind"

// EveryKindResources are what the catch-all webhook sends: every resource,
// and the subresources through which a tenant changes what runs: the scale
// of every workload (kubectl scale) and a pod's resources (in-place resize).
var EveryKindResources = []string{"*", "*/scale", "pods/resize"}

// UnjudgedByEveryKind are the resources the catch-all webhook never sends:
// a running workload's events and leader election go on in a cordoned
// tenant (the rules leave them alone too).
var UnjudgedByEveryKind = []string{"events", "events.events.k8s.io", "leases.coordination.k8s.io"}

// resourceExpression is a request's resource as the lists below name it:
// "pods", "deployments.apps".
const resourceExpression = `(request.resource.group == "" ? request.resource.resource : request.resource.resource + "." + request.resource.group)`

// sentExpression is a request's resource and subresource as Sent names
// them: "pods", "deployments.apps", "pods/resize".
const sentExpression = `(` + resourceExpression + ` + (request.?subResource.orValue("") == "" ? "" : "/" + request.subResource))`

// EveryKindConditions are the catch-all webhook's own match conditions:
// the resources it never sends, and, by operation, the resources and
// subresources the workloads webhook already sends (sent), so that no
// request is decided twice.
func EveryKindConditions(ops []string, sent map[string][]string) []admissionregistrationv1.MatchCondition {
	unjudged, _ := json.Marshal(UnjudgedByEveryKind)
	var parts []string
	for _, op := range ops {
		if names := sent[op]; len(names) > 0 {
			list, _ := json.Marshal(names) // a JSON list of strings is a CEL list
			parts = append(parts, fmt.Sprintf(`!(request.operation == %q && %s in %s)`, op, sentExpression, list))
		}
	}
	out := []admissionregistrationv1.MatchCondition{{Name: "not-events-or-leases", Expression: fmt.Sprintf("!(%s in %s)", resourceExpression, unjudged)}}
	if len(parts) > 0 {
		out = append(out, admissionregistrationv1.MatchCondition{Name: "not-sent-by-the-workloads-webhook", Expression: strings.Join(parts, " && ")})
	}
	return out
}

// Sent are the resources and subresources ("pods", "deployments.apps",
// "pods/resize") that routes send, by operation.
func Sent(routes []catalog.Route) map[string][]string {
	out := map[string][]string{}
	for _, r := range routes {
		resource, sub, _ := strings.Cut(r.Resource, "/")
		name := resource
		if r.Group != "" {
			name += "." + r.Group
		}
		if sub != "" {
			name += "/" + sub
		}
		for _, op := range r.Operations {
			if !slices.Contains(out[op], name) {
				out[op] = append(out[op], name)
			}
		}
	}
	return out
}

// everyKind is the catch-all webhook: every namespaced resource, in tenant
// namespaces, for the operations in which a rule judges every kind, less
// what the workloads webhook sends. Its failurePolicy is Ignore: the kinds
// that carry a tenant's workloads and exposure keep the configured policy
// through the workloads webhook, and an outage of tenantguard must not
// stop every other write in every tenant namespace.
func (o *Options) everyKind(workloads []catalog.Route) []admissionregistrationv1.ValidatingWebhook {
	ops := o.Catalog.EveryKind()
	if len(ops) == 0 {
		return nil
	}
	none := admissionregistrationv1.SideEffectClassNoneOnDryRun
	ignore := admissionregistrationv1.Ignore
	scope := admissionregistrationv1.NamespacedScope
	operations := make([]admissionregistrationv1.OperationType, len(ops))
	for i, op := range ops {
		operations[i] = admissionregistrationv1.OperationType(op)
	}
	conditions := append(slices.Clone(MatchConditions), EveryKindConditions(ops, Sent(workloads))...)
	return []admissionregistrationv1.ValidatingWebhook{{
		Name: EveryKindName + ".tenantguard.io", ClientConfig: o.client("/validate"),
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: operations,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: EveryKindResources, Scope: &scope},
		}},
		FailurePolicy: &ignore, SideEffects: &none, TimeoutSeconds: &o.TimeoutSeconds,
		AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: o.namespaces(true), MatchConditions: conditions,
	}}
}
