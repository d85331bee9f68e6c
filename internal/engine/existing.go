package engine

import (
	"context"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// ReviewExisting decides the CREATE of an object the cluster already has, as
// if it were created now (the audit): Review, except that the tenant counts
// and sums leave out the object's own place and usage, which the view
// counts already, so that a tenant exactly at its quota is not refused the
// objects it holds; and they leave out the creates being decided, which may
// yet be refused (clusterview.View.CountAdmitted). The hosts an Ingress or
// route serves are read as for any request: their holders other than the
// object itself.
func (e *Engine) ReviewExisting(ctx context.Context, req *admission.Request, view *clusterview.View) (*admission.Decision, error) {
	h := &held{resources: e.resourcedExisting(req, view), resourcesKnown: true, existing: true}
	key, tenants := e.counted(req, view)
	if key == "" {
		return e.review(ctx, req, view, h)
	}
	own := e.countedUnder(req, view, key, tenants)
	counts := make(map[string]int, len(tenants))
	for _, t := range tenants {
		n := view.CountAdmitted(t, key)
		if t == own && n > 0 {
			n--
		}
		counts[t] = n
	}
	h.counts = &counting{key: key, tenants: tenants, counts: counts}
	return e.review(ctx, req, view, h)
}

// forMutated is what a request whose object the mutations changed holds,
// h for the request as sent: nil (all worked out from the view) stays nil;
// an existing object's resources are worked out again from the mutated
// object, its counts stay.
func (h *held) forMutated(e *Engine, mutated *admission.Request, view *clusterview.View) *held {
	if h == nil || !h.existing {
		return h
	}
	out := *h
	out.resources = e.resourcedExisting(mutated, view)
	return &out
}

// resourcedExisting is resourced for an object the view has seen: its
// tenant's sums leave out the object's own usage as the view holds it.
func (e *Engine) resourcedExisting(req *admission.Request, view *clusterview.View) *resourcing {
	r := e.resourced(req, view)
	if r == nil {
		return nil
	}
	own, _ := view.SeenUsage(quota.CountClaim(r.claim))
	r.used = make(map[string]int64, len(r.adds))
	for _, a := range r.adds {
		r.used[a.Key] = view.UsedAdmitted(r.tenant, a.Key) - own.Get(a.Key)
	}
	return r
}

// countedUnder is the tenant whose count of key the view counts the
// request's object in, "" when it counts it in none: a namespace under the
// tenant its label names, another object under its namespace's tenant (the
// one of tenants) once the view has seen it.
func (e *Engine) countedUnder(req *admission.Request, view *clusterview.View, key string, tenants []string) string {
	if key == clusterview.NamespacesKey {
		labels, ok := view.NamespaceLabels(req.Name)
		if !ok {
			return ""
		}
		return labels.Get(e.registry.TenantLabel())
	}
	if len(tenants) == 1 && view.Seen(quota.Claim{Key: key, Namespace: req.Namespace, Name: req.Name}) {
		return tenants[0]
	}
	return ""
}
