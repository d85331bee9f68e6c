package engine

import (
	"encoding/json"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

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
	now, err := usageOfRaw(pod, req.AdmissionRequest.Object.Raw)
	if err != nil {
		return nil // the rules refuse what the API server would not store
	}
	var before usage.List
	if req.Operation == admissionv1.Update {
		if before, err = usageOfRaw(pod, req.AdmissionRequest.OldObject.Raw); err != nil {
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

// usageOfRaw is the usage of a pod's or claim's JSON.
func usageOfRaw(pod bool, raw []byte) (usage.List, error) {
	if pod {
		var p podResources
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		return clusterview.PodUsage(p.pod()), nil
	}
	var c corev1.PersistentVolumeClaim
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	return clusterview.ClaimUsage(&c), nil
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

// podResources is the part of a pod its usage depends on: decoding only
// it leaves the rest of the pod (env, volumes, probes) unallocated.
type podResources struct {
	Spec struct {
		Containers     []containerResources         `json:"containers"`
		InitContainers []containerResources         `json:"initContainers"`
		Overhead       corev1.ResourceList          `json:"overhead"`
		Resources      *corev1.ResourceRequirements `json:"resources"`
	} `json:"spec"`
	// Status holds what a resize has allocated already, which counts.
	Status corev1.PodStatus `json:"status"`
}

type containerResources struct {
	Name          string                         `json:"name"`
	Resources     corev1.ResourceRequirements    `json:"resources"`
	RestartPolicy *corev1.ContainerRestartPolicy `json:"restartPolicy"`
}

func (p *podResources) pod() *corev1.Pod {
	out := &corev1.Pod{}
	out.Spec.Containers = containers(p.Spec.Containers)
	out.Spec.InitContainers = containers(p.Spec.InitContainers)
	out.Spec.Overhead, out.Spec.Resources = p.Spec.Overhead, p.Spec.Resources
	out.Status = p.Status
	return out
}

func containers(in []containerResources) []corev1.Container {
	out := make([]corev1.Container, len(in))
	for i, c := range in {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	return out
}
