package engine

import (
	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/usage"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// resourcing is what a request adds to its tenant's sums of the quota
// resources its tenant's resourceQuota limits: a pod or claim created, a
// pod resized, a claim expanded. used are the tenant's sums it is decided
// against, by key; nil until reserved (Admit), read from the view
// otherwise.
type resourcing struct {
	tenant string
	// limits is the tenant's resource quota.
	limits *registry.TenantResourceQuota
	claim  quota.Claim
	// adds are the amounts the request adds; expect is the object's usage
	// once stored, which ends its hold.
	adds, expect usage.List
	used         map[string]int64
}

// resourced returns what a request adds to its tenant's limited sums, or
// nil: the request is not a create of a pod, PersistentVolumeClaim or
// ResourceClaim, a pod's resize or a PersistentVolumeClaim's update, or its
// tenant has no resourceQuota, or the request adds nothing to what it
// limits (a resize down).
func (e *Engine) resourced(req *admission.Request, view *clusterview.View) *resourcing {
	if !e.resources || req.Object == nil || req.Namespace == "" {
		return nil
	}
	kind := summedKind(req.Kind.Group, req.Kind.Kind)
	switch {
	case kind == unsummed:
		return nil
	case req.Operation == admissionv1.Create && req.SubResource == "":
	case req.Operation == admissionv1.Update && kind == summedPod && req.SubResource == "resize":
	case req.Operation == admissionv1.Update && kind == summedClaim && req.SubResource == "":
	default:
		// A ResourceClaim's spec cannot change once created.
		return nil
	}
	labels, ok := view.NamespaceLabels(req.Namespace)
	if !ok {
		return nil
	}
	name := labels.Get(e.registry.TenantLabel())
	tenant, known := e.registry.Tenant(name)
	if !known || tenant.ResourceQuota == nil || len(tenant.ResourceQuota.Hard) == 0 {
		return nil
	}
	var now usage.List
	var err error
	if req.SubResource == "resize" {
		now, err = resizedUsage(req.Object)
	} else {
		now, err = e.usageOf(kind, req.Object)
	}
	if err != nil {
		return nil // the API server stores no such object
	}
	var before usage.List
	if req.Operation == admissionv1.Update {
		if before, err = e.usageOf(kind, req.OldObject); err != nil {
			return nil
		}
	}
	expect := limited(now, tenant.ResourceQuota)
	adds := expect.Increase(limited(before, tenant.ResourceQuota))
	if len(adds) == 0 {
		return nil
	}
	objectName := req.Name
	if objectName == "" {
		objectName = "uid:" + string(req.UID) // not named yet, as a counted create
	}
	return &resourcing{tenant: name, limits: tenant.ResourceQuota, claim: quota.UsageClaim(quota.Claim{Key: clusterview.QuotaKey(req.Resource.Group, req.Resource.Resource), Namespace: req.Namespace, Name: objectName}), adds: adds, expect: expect}
}

// summed is a kind of object whose usage resource quotas sum.
type summed int

const (
	unsummed summed = iota
	summedPod
	summedClaim       // a PersistentVolumeClaim
	summedDeviceClaim // a ResourceClaim
)

// summedKind is the kind of group and kind as resource quotas sum it.
func summedKind(group, kind string) summed {
	switch {
	case group == "" && kind == "Pod":
		return summedPod
	case group == "" && kind == "PersistentVolumeClaim":
		return summedClaim
	case group == usage.ResourceClaimKind.Group && kind == usage.ResourceClaimKind.Kind:
		return summedDeviceClaim
	}
	return unsummed
}

// usageOf is the usage of a decoded pod or claim; a pod's is remembered by
// its shape (usageMemo).
func (e *Engine) usageOf(kind summed, obj ast.Object) (usage.List, error) {
	if obj == nil {
		return nil, nil
	}
	if kind == summedDeviceClaim {
		c, err := deviceClaimOf(obj)
		if err != nil {
			return nil, err
		}
		return clusterview.DeviceClaimUsage(c), nil
	}
	if kind == summedPod {
		shape := podShape(obj)
		if l, ok := e.usages.get(shape); ok {
			return l, nil
		}
		p, err := podOf(obj)
		if err != nil {
			return nil, err
		}
		l := clusterview.PodUsage(p)
		e.usages.put(shape, l)
		return l, nil
	}
	c, err := claimOf(obj)
	if err != nil {
		return nil, err
	}
	return clusterview.ClaimUsage(c), nil
}

// resizedUsage is the usage of a pod's resize as it asks: the
// PodResizePending condition the request carries over from the pod's
// status is the previous resize's, which this one supersedes. Read as an
// infeasible resize, the pod would count its status alone and the resize
// nothing, however much it asks for (as the quota evaluator of Kubernetes
// 1.37 reads it).
func resizedUsage(obj ast.Object) (usage.List, error) {
	p, err := podOf(obj)
	if err != nil {
		return nil, err
	}
	p.Status.Conditions = nil
	return clusterview.PodUsage(p), nil
}

// limited keeps the amounts of the resources q limits, under any of their
// names (cpu or requests.cpu).
func limited(l usage.List, q *registry.TenantResourceQuota) usage.List {
	var out usage.List
	for _, a := range l {
		if q.Limited(a.Key) {
			out = append(out, a)
		}
	}
	return out
}

// resourceFacts is cluster.resources: by the keys of its tenant's
// resourceQuota.hard that the request would take over their limit, what
// the request adds, what its tenant uses and the room its limit leaves, as
// integers in the resources' scale (thousandths of a CPU, bytes, objects:
// usage.Amount), and how many namespaces the tenant has; nil when the
// request fits every limit. The keys it fits cannot refuse it: leaving them
// out spares most requests building the facts at all.
func resourceFacts(r *resourcing, view *clusterview.View) *ast.Term {
	var adds, used, room [][2]*ast.Term
	for _, l := range r.limits.Limits() {
		a := r.adds.Get(l.Canonical)
		if a == 0 {
			continue
		}
		n, ok := r.used[l.Canonical]
		if !ok {
			n = view.Used(r.tenant, l.Canonical)
		}
		if a <= l.Amount-n {
			continue
		}
		k := ast.InternedTerm(l.Key)
		adds = append(adds, ast.Item(k, ast.InternedTerm(a)))
		used = append(used, ast.Item(k, ast.InternedTerm(n)))
		room = append(room, ast.Item(k, ast.InternedTerm(l.Amount-n)))
	}
	if len(adds) == 0 {
		return nil
	}
	return ast.ObjectTerm(
		ast.Item(ast.InternedTerm("adds"), ast.ObjectTerm(adds...)),
		ast.Item(ast.InternedTerm("used"), ast.ObjectTerm(used...)),
		ast.Item(ast.InternedTerm("room"), ast.ObjectTerm(room...)),
		ast.Item(ast.InternedTerm("namespaces"), ast.InternedTerm(view.Count(r.tenant, clusterview.NamespacesKey))),
	)
}
