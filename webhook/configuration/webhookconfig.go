package configuration

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
	// FailurePolicy of the tenant rules; Fail when nil.
	FailurePolicy *admissionregistrationv1.FailurePolicyType
	// TimeoutSeconds of each call; 5 when 0.
	TimeoutSeconds int32
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

var (
	all          = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}
	createUpdate = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
)

// podCarriers are the resources with a pod spec or claims, by group.
var podCarriers = map[string][]string{
	"":      {"pods", "pods/ephemeralcontainers", "podtemplates", "replicationcontrollers", "persistentvolumeclaims", "services"},
	"apps":  {"deployments", "replicasets", "statefulsets", "daemonsets"},
	"batch": {"jobs", "cronjobs"},
}

// namespaceResources are namespaces and their subresources that can change
// labels and annotations (status and finalize updates keep only the spec or
// status as it was), so the metadata rules see every route.
var namespaceResources = []string{"namespaces", "namespaces/status", "namespaces/finalize"}

// companions are the kinds tenantguard generates in tenant namespaces, with
// resourcequotas/status: its hard limits are the ones quota admission
// enforces.
var companions = map[string][]string{
	"":                          {"resourcequotas", "resourcequotas/status", "limitranges"},
	"networking.k8s.io":         {"networkpolicies"},
	"rbac.authorization.k8s.io": {"rolebindings"},
}

func (o *Options) defaults() {
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

func rules(ops []admissionregistrationv1.OperationType, byGroup map[string][]string) []admissionregistrationv1.RuleWithOperations {
	var out []admissionregistrationv1.RuleWithOperations
	for _, group := range []string{"", "apps", "batch", "networking.k8s.io", "rbac.authorization.k8s.io"} {
		if resources, ok := byGroup[group]; ok {
			out = append(out, rule(ops, group, resources...))
		}
	}
	return out
}

func rule(ops []admissionregistrationv1.OperationType, group string, resources ...string) admissionregistrationv1.RuleWithOperations {
	scope := admissionregistrationv1.AllScopes
	return admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources, Scope: &scope},
	}
}

// quotaRules route the CREATE of every counted resource not routed already.
func (o *Options) quotaRules() []admissionregistrationv1.RuleWithOperations {
	routed := map[schema.GroupResource]bool{}
	for _, m := range []map[string][]string{podCarriers, companions} {
		for group, resources := range m {
			for _, r := range resources {
				routed[schema.GroupResource{Group: group, Resource: r}] = true
			}
		}
	}
	var out []admissionregistrationv1.RuleWithOperations
	for _, gr := range o.QuotaResources {
		if !routed[gr] && gr != (schema.GroupResource{Resource: "namespaces"}) {
			out = append(out, rule([]admissionregistrationv1.OperationType{admissionregistrationv1.Create}, gr.Group, gr.Resource))
		}
	}
	return out
}

// Validating is the validating configuration: namespaces (ownership and
// metadata rules), and in tenant namespaces the pod carriers, claims,
// services, companions and counted resources.
func Validating(o Options) *admissionregistrationv1.ValidatingWebhookConfiguration {
	o.defaults()
	none := admissionregistrationv1.SideEffectClassNone
	hook := func(name string, tenantOnly bool, r []admissionregistrationv1.RuleWithOperations) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name: name + ".tenantguard.io", ClientConfig: o.client("/validate"), Rules: r,
			FailurePolicy: o.FailurePolicy, SideEffects: &none, TimeoutSeconds: &o.TimeoutSeconds,
			AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: o.namespaces(tenantOnly), MatchConditions: MatchConditions,
		}
	}
	workloads := append(rules(createUpdate, podCarriers), rules(all, companions)...)
	workloads = append(workloads, o.quotaRules()...)
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			hook("namespaces", false, []admissionregistrationv1.RuleWithOperations{rule(all, "", namespaceResources...)}),
			hook("workloads", true, workloads),
		},
	}
}

// Mutating is the mutating configuration: the tenant label of new
// namespaces, and the default PriorityClass and StorageClass of pods and
// claims in tenant namespaces.
func Mutating(o Options) *admissionregistrationv1.MutatingWebhookConfiguration {
	o.defaults()
	none := admissionregistrationv1.SideEffectClassNone
	never := admissionregistrationv1.NeverReinvocationPolicy
	hook := func(name string, tenantOnly bool, r []admissionregistrationv1.RuleWithOperations) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{
			Name: name + ".tenantguard.io", ClientConfig: o.client("/mutate"), Rules: r,
			FailurePolicy: o.FailurePolicy, SideEffects: &none, TimeoutSeconds: &o.TimeoutSeconds,
			AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: o.namespaces(tenantOnly), MatchConditions: MatchConditions,
			ReinvocationPolicy: &never,
		}
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			hook("namespaces", false, []admissionregistrationv1.RuleWithOperations{rule(createUpdate, "", "namespaces")}),
			hook("workloads", true, rules(createUpdate, podCarriers)),
		},
	}
}
