package configuration

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// hook is what the checks read of a validating or mutating webhook.
type hook struct {
	name       string
	policy     admissionregistrationv1.FailurePolicyType
	timeout    int32
	selector   *metav1.LabelSelector
	rules      []admissionregistrationv1.RuleWithOperations
	conditions []admissionregistrationv1.MatchCondition
	client     admissionregistrationv1.WebhookClientConfig
	effects    admissionregistrationv1.SideEffectClass
}

func hooks(o Options) []hook {
	var out []hook
	for _, w := range Validating(o).Webhooks {
		out = append(out, hook{w.Name, *w.FailurePolicy, *w.TimeoutSeconds, w.NamespaceSelector, w.Rules, w.MatchConditions, w.ClientConfig, *w.SideEffects})
	}
	for _, w := range Mutating(o).Webhooks {
		out = append(out, hook{w.Name, *w.FailurePolicy, *w.TimeoutSeconds, w.NamespaceSelector, w.Rules, w.MatchConditions, w.ClientConfig, *w.SideEffects})
	}
	return out
}

func routes(h hook, group, resource string, op admissionregistrationv1.OperationType) bool {
	for _, r := range h.rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Operations, op) {
			return true
		}
	}
	return false
}

func TestSafetySettings(t *testing.T) {
	all := hooks(Options{URL: "https://127.0.0.1:9443", Namespace: "tenantguard-system"})
	catchAll := func(h hook) bool { return h.name == EveryKindName+".tenantguard.io" }
	tests := []struct {
		name  string
		check func(h hook) bool
	}{
		{"tenant rules fail closed, but for the catch-all", func(h hook) bool { return h.policy == admissionregistrationv1.Fail || catchAll(h) }},
		{"calls time out within 5 seconds", func(h hook) bool { return h.timeout > 0 && h.timeout <= 5 }},
		// server-side dry runs are sent too; an admitted create holds its
		// place in its tenant's counts (in strict mode, in ledger ConfigMaps)
		{"a dry run has no side effect, a request may", func(h hook) bool { return h.effects == admissionregistrationv1.SideEffectClassNoneOnDryRun }},
		{"kube-system, kube-node-lease and tenantguard's namespace are never sent", func(h hook) bool {
			for _, e := range h.selector.MatchExpressions {
				if e.Key == "kubernetes.io/metadata.name" && e.Operator == metav1.LabelSelectorOpNotIn {
					return slices.Contains(e.Values, "kube-system") && slices.Contains(e.Values, "kube-node-lease") && slices.Contains(e.Values, "tenantguard-system")
				}
			}
			return false
		}},
		{"nodes and control-plane components are left out", func(h hook) bool {
			return len(h.conditions) >= 3 && h.conditions[0].Name == "not-a-node" && h.conditions[1].Name == "not-the-control-plane" && h.conditions[2].Name == "not-a-controller-status-write"
		}},
		{"no wildcard groups, resources or operations, but for the catch-all's namespaced resources", func(h hook) bool {
			if catchAll(h) {
				return len(h.rules) == 1 && *h.rules[0].Scope == admissionregistrationv1.NamespacedScope && !slices.Contains(h.rules[0].Operations, admissionregistrationv1.OperationAll)
			}
			for _, r := range h.rules {
				if slices.Contains(r.APIGroups, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.Resources, "*/*") || slices.Contains(r.Operations, admissionregistrationv1.OperationAll) {
					return false
				}
			}
			return len(h.rules) > 0
		}},
		{"the URL names the webhook's path", func(h hook) bool {
			return h.client.URL != nil && (*h.client.URL == "https://127.0.0.1:9443/validate" || *h.client.URL == "https://127.0.0.1:9443/mutate")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, h := range all {
				if !tt.check(h) {
					t.Errorf("webhook %s breaks it", h.name)
				}
			}
		})
	}
}

func TestRouting(t *testing.T) {
	o := Options{URL: "https://x", QuotaResources: []schema.GroupResource{{Resource: "pods"}, {Resource: "configmaps"}, {Group: "apps", Resource: "deployments"}, {Resource: "namespaces"}}}
	v := Validating(o).Webhooks
	m := Mutating(o).Webhooks
	namespaces, workloads := hook{rules: v[0].Rules, selector: v[0].NamespaceSelector}, hook{rules: v[1].Rules, selector: v[1].NamespaceSelector}
	tests := []struct {
		name string
		ok   bool
	}{
		{"namespace deletion is validated", routes(namespaces, "", "namespaces", admissionregistrationv1.Delete)},
		{"namespace creation is mutated (tenant label)", routes(hook{rules: m[0].Rules}, "", "namespaces", admissionregistrationv1.Create)},
		{"pod updates are validated", routes(workloads, "", "pods", admissionregistrationv1.Update)},
		{"ephemeral containers are validated", routes(workloads, "", "pods/ephemeralcontainers", admissionregistrationv1.Update)},
		{"CronJobs are validated", routes(workloads, "batch", "cronjobs", admissionregistrationv1.Create)},
		{"companion deletion is validated", routes(workloads, "networking.k8s.io", "networkpolicies", admissionregistrationv1.Delete)},
		{"a counted resource is validated on create", routes(workloads, "", "configmaps", admissionregistrationv1.Create)},
		{"a counted resource is not validated on update", !routes(workloads, "", "configmaps", admissionregistrationv1.Update)},
		{"ResourceClaims are validated on create (the devices they add)", routes(workloads, "resource.k8s.io", "resourceclaims", admissionregistrationv1.Create)},
		{"ResourceClaims are not validated on update, which cannot change their spec, by the workloads webhook", !routes(workloads, "resource.k8s.io", "resourceclaims", admissionregistrationv1.Update)},
		{"pods are mutated (default PriorityClass)", routes(hook{rules: m[1].Rules}, "", "pods", admissionregistrationv1.Create)},
		{"claims are mutated (default StorageClass)", routes(hook{rules: m[1].Rules}, "", "persistentvolumeclaims", admissionregistrationv1.Create)},
		{"the namespaces webhook sees every namespace", len(namespaces.selector.MatchExpressions) == 1},
		{"the workloads webhook sees tenant namespaces only", slices.ContainsFunc(workloads.selector.MatchExpressions, func(e metav1.LabelSelectorRequirement) bool {
			return e.Key == "tenantguard.io/tenant" && e.Operator == metav1.LabelSelectorOpExists
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				t.Error("no")
			}
		})
	}
	for _, r := range workloads.rules {
		if slices.Contains(r.Resources, "namespaces") {
			t.Error("namespaces routed to the workloads webhook")
		}
	}
}

func TestEveryKind(t *testing.T) {
	o := Options{URL: "https://x", QuotaResources: []schema.GroupResource{{Resource: "configmaps"}}}
	v := Validating(o).Webhooks
	last := v[len(v)-1]
	conditions := map[string]string{}
	for _, c := range last.MatchConditions {
		conditions[c.Name] = c.Expression
	}
	tests := []struct {
		name string
		ok   bool
	}{
		{"the catch-all comes last", last.Name == "every-kind.tenantguard.io"},
		{"it sends creates and updates of every namespaced resource", routes(hook{rules: last.Rules}, "*", "*", admissionregistrationv1.Create) && routes(hook{rules: last.Rules}, "*", "*", admissionregistrationv1.Update) && !routes(hook{rules: last.Rules}, "*", "*", admissionregistrationv1.Delete)},
		{"it sends workloads' scale and pods' resize, which change what runs", slices.Contains(last.Rules[0].Resources, "*/scale") && slices.Contains(last.Rules[0].Resources, "pods/resize")},
		{"it sends the subresources the workloads webhook does not send (a scale), and not those it does (a pod's resize)", strings.Contains(conditions["not-sent-by-the-workloads-webhook"], `"/" + request.subResource`) &&
			strings.Contains(conditions["not-sent-by-the-workloads-webhook"], `"pods/resize"`) && !strings.Contains(conditions["not-sent-by-the-workloads-webhook"], `/scale"`)},
		{"it sees tenant namespaces only", slices.ContainsFunc(last.NamespaceSelector.MatchExpressions, func(e metav1.LabelSelectorRequirement) bool {
			return e.Key == "tenantguard.io/tenant" && e.Operator == metav1.LabelSelectorOpExists
		})},
		{"it leaves out events and leases", strings.Contains(conditions["not-events-or-leases"], `"events","events.events.k8s.io","leases.coordination.k8s.io"`)},
		{"it leaves out pod creates and updates, which the workloads webhook sends", strings.Contains(conditions["not-sent-by-the-workloads-webhook"], `!(request.operation == "CREATE" && `) && strings.Contains(conditions["not-sent-by-the-workloads-webhook"], `"pods"`)},
		{"it leaves out the counted resources' creates, not their updates", strings.Count(conditions["not-sent-by-the-workloads-webhook"], `"configmaps"`) == 1},
		{"it leaves out ResourceClaims' creates, not their updates, which the rule of their devices does not see", strings.Count(conditions["not-sent-by-the-workloads-webhook"], `"resourceclaims.resource.k8s.io"`) == 1},
		{"it keeps the nodes and control plane out", conditions["not-a-node"] != "" && conditions["not-the-control-plane"] != ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				t.Errorf("no: %+v", last)
			}
		})
	}
}

func TestServiceReference(t *testing.T) {
	svc := &admissionregistrationv1.ServiceReference{Namespace: "tenantguard-system", Name: "tenantguard"}
	for _, h := range hooks(Options{Service: svc, Namespace: "tenantguard-system"}) {
		if h.client.URL != nil || h.client.Service == nil || h.client.Service.Path == nil || h.client.Service.Name != "tenantguard" {
			t.Errorf("webhook %s: client %+v", h.name, h.client)
		}
	}
	if svc.Path != nil {
		t.Error("the caller's ServiceReference was modified")
	}
}
