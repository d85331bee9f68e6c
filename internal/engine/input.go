package engine

import (
	"context"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/usage"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// input is the policy input: the request as decoded, and the cluster facts
// its rules need, from the view, built as OPA values.
type input struct {
	// request is the request as the API server sent it
	// (admission.Request.Value).
	request ast.Object
	// patched, when a mutation changed the object, replaces the request's.
	patched ast.Object
	cluster ast.Object
}

// value is the OPA value both queries read.
func (in *input) value() ast.Value {
	request := in.request
	if in.patched != nil {
		request = withObject(request, in.patched)
	}
	return ast.NewObject(
		ast.Item(ast.InternedTerm("request"), ast.NewTerm(request)),
		ast.Item(ast.InternedTerm("cluster"), ast.NewTerm(in.cluster)),
	)
}

// withObject is request with its object replaced; request is not modified.
func withObject(request, object ast.Object) ast.Object {
	key := ast.InternedTerm("object")
	fields := make([][2]*ast.Term, 0, request.Len()+1)
	request.Foreach(func(k, v *ast.Term) {
		if !k.Equal(key) {
			fields = append(fields, ast.Item(k, v))
		}
	})
	return ast.NewObject(append(fields, ast.Item(key, ast.NewTerm(object)))...)
}

// counting is what a create counts against (counted) and the counts, by
// tenant, it is decided with; nil counts are read from the view.
type counting struct {
	key     string
	tenants []string
	counts  map[string]int
}

// held is what a request holds while Admit decides it: its place in its
// tenant's counts, and the hosts its object will serve. A nil field is
// worked out from the view, holding nothing.
type held struct {
	counts *counting
	hosts  *serving
	// resources is what the request adds to its tenant's sums, once
	// resourcesKnown; keepResources keeps its hold, after keepHosts.
	resources      *resourcing
	resourcesKnown bool
	keepResources  quota.Hold
	// existing says resources are an existing object's, whose own usage
	// the view counts already (ReviewExisting).
	existing bool
	// keepHosts keeps the request's hosts in the ledger of hosts (strict
	// mode), once the request is admitted and before its place in the
	// counts is kept: the shared ledger of hosts is the likelier to have
	// changed (quota.ErrStale), and a request decided again must not have
	// kept its count already.
	keepHosts quota.Hold
	// kept collects, over every time Admit decides the request, the holds
	// kept, which Admit withdraws if the request ends refused; nil with a
	// ledger that does not withdraw (the local one).
	kept *[]quota.Hold
}

// keepFirst keeps what must be kept before the request's counts: its hosts,
// then what it adds to its tenant's sums. An error from either is returned
// as keptFirstError: the request must be decided again from the start.
func (h *held) keepFirst(ctx context.Context) error {
	if h == nil {
		return nil
	}
	for _, hold := range []quota.Hold{h.keepHosts, h.keepResources} {
		if hold == nil {
			continue
		}
		if err := hold.Keep(ctx); err != nil {
			return keptFirstError{err}
		}
		if h.kept != nil {
			*h.kept = append(*h.kept, hold)
		}
	}
	return nil
}

// keptFirstError is a hold kept before the counts that failed: ErrStale
// from it is not the counts' to retry, but Admit's.
type keptFirstError struct{ error }

func (e keptFirstError) Unwrap() error { return e.error }

// input builds the policy input; h is nil when the caller holds nothing
// (no reservation).
func (e *Engine) input(req *admission.Request, view *clusterview.View, h *held) *input {
	var q *counting
	var s *serving
	var r *resourcing
	if h != nil {
		q, s, r = h.counts, h.hosts, h.resources
	}
	if h == nil || !h.resourcesKnown {
		r = e.resourced(req, view)
	}
	if q == nil {
		key, tenants := e.counted(req, view)
		q = &counting{key: key, tenants: tenants}
	}
	if s == nil {
		s = e.served(req, view)
	}
	return &input{request: req.Value, cluster: e.facts(req, view, q, s, r)}
}

// facts gathers the cluster facts one request's rules read: the labels of its
// namespace, the tenant counts that could be exceeded, what it adds to its
// tenant's sums of quota resources and those sums (for the sums it would
// take over their limit), the default
// PriorityClass of a created Pod, and the other holders of the hosts an
// Ingress or route serves. Lookups are by key, never scans.
func (e *Engine) facts(req *admission.Request, view *clusterview.View, q *counting, s *serving, r *resourcing) ast.Object {
	cluster := ast.NewObjectWithCapacity(3)
	if q.key != "" {
		cluster.Insert(ast.InternedTerm("counts"), countFacts(q, view))
	}
	if r != nil {
		if t := resourceFacts(r, view); t != nil {
			cluster.Insert(ast.InternedTerm("resources"), t)
		}
	}
	if s != nil && s.facts {
		cluster.Insert(ast.InternedTerm("hosts"), hostFacts(s, view))
	}
	if req.Kind.Group == "" && req.Kind.Kind == "Namespace" {
		if labels, ok := view.NamespaceLabels(req.Name); ok {
			cluster.Insert(ast.InternedTerm("namespace"), namespaceTerm(req.Name, labels))
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
	cluster.Insert(ast.InternedTerm("namespace"), namespaceTerm(req.Namespace, labels))
	tenant, known := e.registry.Tenant(labels.Get(e.registry.TenantLabel()))
	if !known || !creating(req) {
		return cluster
	}
	if req.Kind.Group == "" && req.Kind.Kind == "Pod" && tenant.PriorityClasses != nil && tenant.PriorityClasses.Default != "" {
		if pc, ok := view.PriorityClass(tenant.PriorityClasses.Default); ok {
			cluster.Insert(ast.InternedTerm("priorityClasses"), classes.term(classFacts{tenant.PriorityClasses.Default, pc}))
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
		if req.Object != nil {
			if t, err := req.Object.Find(ast.Ref{ast.InternedTerm("metadata"), ast.InternedTerm("labels"), ast.InternedTerm(e.registry.TenantLabel())}); err == nil {
				// A tenant of the registry: only those have quotas, and
				// their names are DNS labels (a label value may hold
				// dots, which the strict ledger's names give a meaning).
				if s, ok := t.(ast.String); ok {
					if _, registered := e.registry.Tenant(string(s)); registered {
						// A copy: the view may keep it, and the decoded
						// string shares the whole request body's memory.
						candidates = append(candidates, strings.Clone(string(s)))
					}
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
	name := labels.Get(e.registry.TenantLabel())
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
func countFacts(q *counting, view *clusterview.View) *ast.Term {
	facts := make([][2]*ast.Term, 0, len(q.tenants))
	for _, t := range q.tenants {
		n, ok := q.counts[t]
		if !ok {
			n = view.Count(t, q.key)
		}
		facts = append(facts, ast.Item(ast.InternedTerm(t), ast.ObjectTerm(ast.Item(ast.InternedTerm(q.key), ast.InternedTerm(n)))))
	}
	return ast.ObjectTerm(facts...)
}

// namespaceTerm is cluster.namespace, built for each request: kept with the
// namespace in the view, it would cost every collection its objects (see
// clusterview's namespace).
func namespaceTerm(name string, labels clusterview.Labels) *ast.Term {
	l := make([][2]*ast.Term, 0, labels.Len())
	for k, v := range labels.All() {
		l = append(l, ast.Item(ast.InternedTerm(k), ast.InternedTerm(v)))
	}
	return ast.ObjectTerm(
		ast.Item(ast.InternedTerm("name"), ast.InternedTerm(name)),
		ast.Item(ast.InternedTerm("labels"), ast.ObjectTerm(l...)),
	)
}

func init() {
	// The keys of the input and of the decision, made once: InternedTerm
	// finds them instead of allocating a term per request.
	ast.InternStringTerm(
		"request", "cluster", "object", "metadata", "name", "namespace",
		"labels", "counts", "priorityClasses", "hosts", "resources", "adds", "used", "namespaces",
		"group", "kind", "tenant",
		"priority", "preemptionPolicy", "allowed", "deny", "warn", "dryrun",
		"id", "msg", "room",
	)
	// The resources counted and summed most (cluster.counts and
	// cluster.resources keys).
	ast.InternStringTerm("pods", "persistentvolumeclaims", "services")
	ast.InternStringTerm(usage.NativeKeys()...)
}
