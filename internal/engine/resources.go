package engine

import (
	"encoding/json"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
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
	// hard are the tenant's limits, by the names the registry gives them.
	hard  map[string]string
	claim quota.Claim
	// adds are the amounts the request adds; expect is the object's usage
	// once stored, which ends its hold.
	adds, expect usage.List
	used         map[string]int64
}

// resourced returns what a request adds to its tenant's limited sums, or
// nil: the request is not a create of a pod or claim, a pod's resize or a
// claim's update, or its tenant has no resourceQuota, or the request adds
// nothing to what it limits (a resize down).
func (e *Engine) resourced(req *admission.Request, view *clusterview.View) *resourcing {
	if !e.resources || req.Object == nil || req.Namespace == "" || req.Kind.Group != "" {
		return nil
	}
	pod := req.Kind.Kind == "Pod"
	switch {
	case req.Operation == admissionv1.Create && req.SubResource == "" && (pod || req.Kind.Kind == "PersistentVolumeClaim"):
	case req.Operation == admissionv1.Update && pod && req.SubResource == "resize":
	case req.Operation == admissionv1.Update && req.Kind.Kind == "PersistentVolumeClaim" && req.SubResource == "":
	default:
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
	now, err := usageOf(pod, req.Object)
	if err != nil {
		return nil // the API server stores no such object
	}
	var before usage.List
	if req.Operation == admissionv1.Update {
		if before, err = usageOf(pod, req.OldObject); err != nil {
			return nil
		}
	}
	expect := limited(now, tenant.ResourceQuota.Hard)
	adds := expect.Increase(limited(before, tenant.ResourceQuota.Hard))
	if len(adds) == 0 {
		return nil
	}
	objectName := req.Name
	if objectName == "" {
		objectName = "uid:" + string(req.UID) // not named yet, as a counted create
	}
	return &resourcing{tenant: name, hard: tenant.ResourceQuota.Hard, claim: quota.UsageClaim(quota.Claim{Key: req.Resource.Resource, Namespace: req.Namespace, Name: objectName}), adds: adds, expect: expect}
}

// usageOf is the usage of a decoded pod or claim.
func usageOf(pod bool, obj ast.Object) (usage.List, error) {
	if obj == nil {
		return nil, nil
	}
	if pod {
		p, err := podOf(obj)
		if err != nil {
			return nil, err
		}
		return clusterview.PodUsage(p), nil
	}
	c, err := claimOf(obj)
	if err != nil {
		return nil, err
	}
	return clusterview.ClaimUsage(c), nil
}

// limited keeps the amounts of the resources hard limits, under any of
// their names (cpu or requests.cpu).
func limited(l usage.List, hard map[string]string) usage.List {
	var out usage.List
	for _, a := range l {
		for key := range hard {
			if usage.Canonical(key) == a.Key {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// resourceFacts is cluster.resources: what the request adds and the sums of
// its tenant, by the keys of its resourceQuota.hard, in the units
// units.parse reads (cores, bytes), and how many namespaces the tenant has.
func resourceFacts(r *resourcing, view *clusterview.View) *ast.Term {
	adds := make([][2]*ast.Term, 0, len(r.adds))
	used := make([][2]*ast.Term, 0, len(r.adds))
	for key := range r.hard {
		c := usage.Canonical(key)
		a := r.adds.Get(c)
		if a == 0 {
			continue
		}
		n, ok := r.used[c]
		if !ok {
			n = view.Used(r.tenant, c)
		}
		adds = append(adds, ast.Item(ast.InternedTerm(key), amountTerm(key, a)))
		used = append(used, ast.Item(ast.InternedTerm(key), amountTerm(key, n)))
	}
	return ast.ObjectTerm(
		ast.Item(ast.InternedTerm("adds"), ast.ObjectTerm(adds...)),
		ast.Item(ast.InternedTerm("used"), ast.ObjectTerm(used...)),
		ast.Item(ast.InternedTerm("namespaces"), ast.InternedTerm(view.Count(r.tenant, clusterview.NamespacesKey))),
	)
}

// amountTerm is an amount as a number in the quantity's own unit: CPU in
// cores (1500 thousandths are 1.5), the rest as is.
func amountTerm(key string, n int64) *ast.Term {
	if !usage.Milli(key) || n%1000 == 0 {
		if usage.Milli(key) {
			n /= 1000
		}
		return ast.NumberTerm(json.Number(strconv.FormatInt(n, 10)))
	}
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	frac := strconv.FormatInt(1000+n%1000, 10)[1:] // three digits
	for frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	return ast.NumberTerm(json.Number(sign + strconv.FormatInt(n/1000, 10) + "." + frac))
}
