package engine

import (
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/tenantguard/tenantguard/internal/admission"
	"github.com/tenantguard/tenantguard/internal/clusterview"
)

// input is the policy input: the request, trimmed to what rules read, and the
// cluster facts its rules need, from the view.
type input struct {
	request map[string]any
	cluster map[string]any
}

// value converts the input to the OPA value both queries read.
func (in *input) value() (ast.Value, error) {
	v, err := ast.InterfaceToValue(map[string]any{"request": in.request, "cluster": in.cluster})
	if err != nil {
		return nil, fmt.Errorf("building the policy input: %w", err)
	}
	return v, nil
}

// quota is what a create counts against (counted) and the counts, by
// tenant, it is decided with; nil counts are read from the view.
type quota struct {
	key     string
	tenants []string
	counts  map[string]int
}

// input builds the policy input; q is nil when the caller has not worked
// out the request's quota (no reservation).
func (e *Engine) input(req *admission.Request, view *clusterview.View, q *quota) *input {
	if q == nil {
		key, tenants := e.counted(req, view)
		q = &quota{key: key, tenants: tenants}
	}
	groups := make([]any, len(req.UserInfo.Groups))
	for i, g := range req.UserInfo.Groups {
		groups[i] = g
	}
	r := map[string]any{
		"uid":         string(req.UID),
		"kind":        map[string]any{"group": req.Kind.Group, "version": req.Kind.Version, "kind": req.Kind.Kind},
		"resource":    map[string]any{"group": req.Resource.Group, "version": req.Resource.Version, "resource": req.Resource.Resource},
		"subResource": req.SubResource,
		"namespace":   req.Namespace,
		"name":        req.Name,
		"operation":   string(req.Operation),
		"userInfo":    map[string]any{"username": req.UserInfo.Username, "groups": groups},
	}
	if req.Object != nil {
		r["object"] = trimObject(req.Object)
	}
	if req.OldObject != nil {
		r["oldObject"] = trimObject(req.OldObject)
	}
	return &input{request: r, cluster: e.facts(req, view, q)}
}

// trimObject drops metadata.managedFields, often the largest part of an
// object and read by no rule, without modifying the original.
func trimObject(obj map[string]any) map[string]any {
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return obj
	}
	if _, has := meta["managedFields"]; !has {
		return obj
	}
	trimmedMeta := make(map[string]any, len(meta))
	for k, v := range meta {
		if k != "managedFields" {
			trimmedMeta[k] = v
		}
	}
	trimmed := make(map[string]any, len(obj))
	for k, v := range obj {
		trimmed[k] = v
	}
	trimmed["metadata"] = trimmedMeta
	return trimmed
}

// facts gathers the cluster facts one request's rules read: the labels of its
// namespace, the tenant counts that could be exceeded, and the default
// PriorityClass of a created Pod. Lookups are by key, never scans.
func (e *Engine) facts(req *admission.Request, view *clusterview.View, q *quota) map[string]any {
	cluster := map[string]any{}
	if q.key != "" {
		cluster["counts"] = countFacts(q, view)
	}
	if req.Kind.Group == "" && req.Kind.Kind == "Namespace" {
		if labels, ok := view.NamespaceLabels(req.Name); ok {
			cluster["namespace"] = namespaceFacts(req.Name, labels)
		}
		return cluster
	}
	if req.Namespace == "" {
		return cluster
	}
	labels, ok := view.NamespaceLabels(req.Namespace)
	if !ok {
		return cluster
	}
	cluster["namespace"] = namespaceFacts(req.Namespace, labels)
	tenant, known := e.registry.Tenant(labels[e.registry.TenantLabel()])
	if !known || !creating(req) {
		return cluster
	}
	if req.Kind.Group == "" && req.Kind.Kind == "Pod" && tenant.PriorityClasses != nil && tenant.PriorityClasses.Default != "" {
		if pc, ok := view.PriorityClass(tenant.PriorityClasses.Default); ok {
			facts := map[string]any{"priority": int64(pc.Value)}
			if pc.PreemptionPolicy != "" {
				facts["preemptionPolicy"] = pc.PreemptionPolicy
			}
			cluster["priorityClasses"] = map[string]any{tenant.PriorityClasses.Default: facts}
		}
	}
	return cluster
}

// creating reports whether a request creates an object (not a subresource).
func creating(req *admission.Request) bool {
	return req.Operation == admissionv1.Create && req.SubResource == ""
}

// counted returns what a create counts against: the quota key and the
// tenants whose count it could exceed, sorted. For a namespace, those are
// every tenant it could be meant for: the requester's, the labelled and the
// prefixed one. key is "" when no count applies.
func (e *Engine) counted(req *admission.Request, view *clusterview.View) (key string, tenants []string) {
	if !creating(req) {
		return "", nil
	}
	if req.Kind.Group == "" && req.Kind.Kind == "Namespace" {
		candidates := e.registry.OwnedBy(req.UserInfo.Username, req.UserInfo.Groups)
		if metadata, ok := req.Object["metadata"].(map[string]any); ok {
			if labels, ok := metadata["labels"].(map[string]any); ok {
				if t, ok := labels[e.registry.TenantLabel()].(string); ok {
					candidates = append(candidates, t)
				}
			}
		}
		if t, ok := e.registry.PrefixTenant(req.Name); ok {
			candidates = append(candidates, t)
		}
		slices.Sort(candidates)
		return clusterview.NamespacesKey, slices.Compact(candidates)
	}
	if req.Namespace == "" {
		return "", nil
	}
	labels, ok := view.NamespaceLabels(req.Namespace)
	if !ok {
		return "", nil
	}
	name := labels[e.registry.TenantLabel()]
	tenant, known := e.registry.Tenant(name)
	if !known {
		return "", nil
	}
	key = clusterview.QuotaKey(req.Resource.Group, req.Resource.Resource)
	if _, limited := tenant.Quotas[key]; !limited {
		return "", nil
	}
	return key, []string{name}
}

// countFacts is cluster.counts: tenant -> key -> count.
func countFacts(q *quota, view *clusterview.View) map[string]any {
	facts := make(map[string]any, len(q.tenants))
	for _, t := range q.tenants {
		n, ok := q.counts[t]
		if !ok {
			n = view.Count(t, q.key)
		}
		facts[t] = map[string]any{q.key: n}
	}
	return facts
}

func namespaceFacts(name string, labels map[string]string) map[string]any {
	l := make(map[string]any, len(labels))
	for k, v := range labels {
		l[k] = v
	}
	return map[string]any{"name": name, "labels": l}
}
