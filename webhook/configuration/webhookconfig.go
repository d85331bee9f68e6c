package configuration

import (
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// Options describe where the webhook runs and how it is routed.
type Options struct {
	// Name of both configurations; "tenantguard" when empty.
	Name string
	// URL is the server's base URL (out-of-cluster), or Service the in-cluster service.
	URL     string
	Service *admissionregistrationv1.ServiceReference
	// CABundle verifies the serving certificate.
	CABundle []byte
	// Namespace is tenantguard's own namespace, always exempt.
	Namespace string
	// TenantLabel selects tenant namespaces; registry.DefaultTenantLabel when empty.
	TenantLabel string
	// QuotaResources are the resources tenant quotas count (Snapshot.QuotaResources).
	QuotaResources []schema.GroupResource
	// Catalog is the rule library whose rules the webhooks must see;
	// nil is the embedded one.
	Catalog *catalog.Catalog
	// FailurePolicy of the tenant rules; Fail when nil.
	FailurePolicy *admissionregistrationv1.FailurePolicyType
	// TimeoutSeconds of each call; 5 when 0.
	TimeoutSeconds int32
	// BreakGlassGroups get webhooks of their own, with failurePolicy
	// Ignore: their requests are decided like everyone's while tenantguard
	// answers, and let through when it does not.
	BreakGlassGroups []string
}

// ExemptNamespaces are never sent to the webhook besides Options.Namespace:
// a dead webhook must not stop the control plane or node heartbeats.
var ExemptNamespaces = []string{"kube-system", "kube-node-lease"}

// MatchConditions leave out nodes and the control plane's own identities:
// they are never tenants, and the cluster must keep working without
// tenantguard. The controllers of kube-system (quota, namespace) write the
// routed status and finalize subresources all the time; those writes are
// left out too, so they neither cost a call nor stall while tenantguard is
// down. The exported admission policies carry them too.
var MatchConditions = []admissionregistrationv1.MatchCondition{
	{Name: "not-a-node", Expression: `!("system:nodes" in request.userInfo.groups)`},
	{Name: "not-the-control-plane", Expression: `!(request.userInfo.username in ["system:apiserver", "system:kube-scheduler", "system:kube-controller-manager"])`},
	{Name: "not-a-controller-status-write", Expression: `!(request.?subResource.orValue("") in ["status", "finalize"] && request.userInfo.username.startsWith("system:serviceaccount:kube-system:"))`},
}

func (o *Options) defaults() {
	if o.Catalog == nil {
		o.Catalog = catalog.MustEmbedded()
	}
	if o.Name == "" {
		o.Name = "tenantguard"
	}
	if o.TenantLabel == "" {
		o.TenantLabel = registry.DefaultTenantLabel
	}
	if o.FailurePolicy == nil {
		fail := admissionregistrationv1.Fail
		o.FailurePolicy = &fail
	}
	if o.TimeoutSeconds == 0 {
		o.TimeoutSeconds = 5
	}
}

func (o *Options) client(path string) admissionregistrationv1.WebhookClientConfig {
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: o.CABundle}
	if o.Service != nil {
		svc := *o.Service
		svc.Path = &path
		cc.Service = &svc
	} else {
		url := o.URL + path
		cc.URL = &url
	}
	return cc
}

// namespaces selects every namespace but the exempt ones; tenantOnly also
// requires the tenant label.
func (o *Options) namespaces(tenantOnly bool) *metav1.LabelSelector {
	sel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn,
		Values: append(append([]string{}, ExemptNamespaces...), o.Namespace),
	}}}
	if tenantOnly {
		sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{Key: o.TenantLabel, Operator: metav1.LabelSelectorOpExists})
	}
	return sel
}

// Rules groups routes into webhook rules: one rule per group and set of
// operations, its resources in the routes' order.
func Rules(routes []catalog.Route) []admissionregistrationv1.RuleWithOperations {
	var out []admissionregistrationv1.RuleWithOperations
	scope := admissionregistrationv1.AllScopes
	for _, r := range routes {
		ops := make([]admissionregistrationv1.OperationType, len(r.Operations))
		for i, op := range r.Operations {
			ops[i] = admissionregistrationv1.OperationType(op)
		}
		i := slices.IndexFunc(out, func(o admissionregistrationv1.RuleWithOperations) bool {
			return o.APIGroups[0] == r.Group && slices.Equal(o.Operations, ops)
		})
		if i < 0 {
			out = append(out, admissionregistrationv1.RuleWithOperations{
				Operations: ops,
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{r.Group}, APIVersions: []string{"*"}, Scope: &scope},
			})
			i = len(out) - 1
		}
		out[i].Resources = append(out[i].Resources, r.Resource)
	}
	return out
}

// Counted are the routes of the resources the registry counts that the
// catalog's rules do not already see created: their creates, which the
// rules judging the counted resources must see.
func Counted(routed []catalog.Route, counted []schema.GroupResource) []catalog.Route {
	var out []catalog.Route
	for _, gr := range counted {
		created := slices.ContainsFunc(routed, func(r catalog.Route) bool {
			return r.Group == gr.Group && r.Resource == gr.Resource && slices.Contains(r.Operations, "CREATE")
		})
		if !created && gr != (schema.GroupResource{Resource: "namespaces"}) {
			out = append(out, catalog.Route{Group: gr.Group, Resource: gr.Resource, Operations: []string{"CREATE"}})
		}
	}
	return out
}

// routes are the catalog's routes for one of the two configurations, the
// counted resources' added to the validating workloads.
func (o *Options) routes(mutating bool) (namespaces, workloads []catalog.Route) {
	namespaces, workloads = o.Catalog.Routes(mutating)
	if !mutating && o.Catalog.CountsAnything() {
		workloads = append(workloads, Counted(workloads, o.QuotaResources)...)
	}
	return namespaces, workloads
}

// Validating is the validating configuration: namespaces (ownership and
// metadata rules), and in tenant namespaces the kinds every other rule
// judges, with the counted resources' creates, and, for the rules that
// judge every kind, the catch-all webhook (everyKind).
func Validating(o Options) *admissionregistrationv1.ValidatingWebhookConfiguration {
	o.defaults()
	none := admissionregistrationv1.SideEffectClassNoneOnDryRun
	var hooks []admissionregistrationv1.ValidatingWebhook
	add := func(name string, tenantOnly bool, routes []catalog.Route) {
		for _, v := range o.variants() {
			hooks = append(hooks, admissionregistrationv1.ValidatingWebhook{
				Name: name + "." + v.infix + "tenantguard.io", ClientConfig: o.client("/validate"), Rules: Rules(routes),
				FailurePolicy: v.failurePolicy, SideEffects: &none, TimeoutSeconds: &o.TimeoutSeconds,
				AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: o.namespaces(tenantOnly), MatchConditions: v.conditions,
			})
		}
	}
	namespaces, workloads := o.routes(false)
	add("namespaces", false, namespaces)
	add("workloads", true, workloads)
	hooks = append(hooks, o.everyKind(workloads)...)
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Webhooks:   hooks,
	}
}

// Mutating is the mutating configuration: the kinds of the rules that
// mutate (the tenant label of new namespaces, the default PriorityClass
// and StorageClass of pods and claims in tenant namespaces).
func Mutating(o Options) *admissionregistrationv1.MutatingWebhookConfiguration {
	o.defaults()
	none := admissionregistrationv1.SideEffectClassNoneOnDryRun
	never := admissionregistrationv1.NeverReinvocationPolicy
	var hooks []admissionregistrationv1.MutatingWebhook
	add := func(name string, tenantOnly bool, routes []catalog.Route) {
		for _, v := range o.variants() {
			hooks = append(hooks, admissionregistrationv1.MutatingWebhook{
				Name: name + "." + v.infix + "tenantguard.io", ClientConfig: o.client("/mutate"), Rules: Rules(routes),
				FailurePolicy: v.failurePolicy, SideEffects: &none, TimeoutSeconds: &o.TimeoutSeconds,
				AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: o.namespaces(tenantOnly), MatchConditions: v.conditions,
				ReinvocationPolicy: &never,
			})
		}
	}
	namespaces, workloads := o.routes(true)
	add("namespaces", false, namespaces)
	add("workloads", true, workloads)
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Webhooks:   hooks,
	}
}
