package scale

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/usage"
)

// Registry is the bare registry document of n tenants t0..t(n-1), owned by
// users u0.. and groups g0.., each allowed 10 namespaces and 200 pods, a
// tenant-wide resource quota (30 CPUs and 40Gi of memory requested, 120 CPUs
// and 160Gi in limits, 100Gi of claims: room for its 200 pods),
// images of docker.io/library and registry.example.com pulled Always,
// RuntimeClass gvisor and its own node pool (pool=t<i>), with a
// ResourceQuota and a LimitRange as companions.
func Registry(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: tenantguard.io/v1\nkind: TenantRegistry\nsettings: {forceTenantPrefix: true}\ntenants:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - name: t%d\n    owners: [{kind: User, name: u%d}, {kind: Group, name: g%d}]\n    namespaceQuota: 10\n", i, i, i)
		b.WriteString("    priorityClasses: {allowed: [tenant-low, tenant-high], default: tenant-low}\n")
		b.WriteString("    storageClasses: {allowed: [standard], default: standard}\n    quotas: {pods: 200, persistentvolumeclaims: 10}\n")
		b.WriteString("    resourceQuota: {hard: {requests.cpu: \"30\", requests.memory: 40Gi, limits.cpu: \"120\", limits.memory: 160Gi, requests.storage: 100Gi}}\n")
		b.WriteString("    images: {allowedRegistries: [docker.io/library, registry.example.com], allowedPullPolicies: [Always]}\n")
		b.WriteString("    runtimeClasses: {allowed: [gvisor], default: gvisor}\n")
		b.WriteString("    ingress: {hostnameCollision: cluster}\n")
		fmt.Fprintf(&b, "    nodePlacement: {nodeSelector: {pool: t%d}, tolerations: [{key: pool, value: t%d, effect: NoSchedule}]}\n", i, i)
		b.WriteString("    companions: {resourceQuota: {hard: {requests.cpu: \"4\"}}, limitRange: {limits: [{type: Container, default: {cpu: 500m}}]}}\n")
	}
	return []byte(b.String())
}

// RegistryPlusOne is Registry(n) with one more tenant, "extra", owned by
// user "extra" and holding no namespace: a changed registry under which
// every request about t0..t(n-1) is decided as under Registry(n).
func RegistryPlusOne(n int) []byte {
	return append(Registry(n), "  - name: extra\n    owners: [{kind: User, name: extra}]\n"...)
}

// PriorityClasses are the classes the registry's tenants may use, as the
// view keeps them.
var PriorityClasses = map[string]int32{"tenant-low": 1000, "tenant-high": 100000}

// Objects calls yield with every object of the cluster Fill builds: the
// PriorityClasses, then namespaces t<i>-ns<j> labelled with their tenant,
// each followed by its pods p<k> and by the edge of the namespace
// (EdgeObjects): at 10,000 namespaces, 20,000 Ingresses and routes.
func Objects(tenants, namespaces, pods int, yield func(clusterview.Object)) {
	for name, value := range PriorityClasses {
		yield(clusterview.Object{Group: "scheduling.k8s.io", Kind: "PriorityClass", Resource: "priorityclasses", Name: name, PriorityClass: &clusterview.PriorityClass{Value: value}})
	}
	for i := range tenants {
		for j := range namespaces {
			ns := fmt.Sprintf("t%d-ns%d", i, j)
			yield(clusterview.Object{Kind: "Namespace", Resource: "namespaces", Name: ns, Labels: map[string]string{registry.DefaultTenantLabel: fmt.Sprintf("t%d", i)}})
			for k := range pods {
				yield(clusterview.Object{Kind: "Pod", Resource: "pods", Namespace: ns, Name: fmt.Sprintf("p%d", k), Usage: PodUsage})
			}
			EdgeObjects(i, j, yield)
		}
	}
}

// PodResources are the resources of the containers of the scale
// cluster's pods and of the corpus's, as JSON.
const PodResources = `{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"cpu":"500m","memory":"512Mi"}}`

// PodUsage is what each pod of the scale cluster adds to its tenant's
// sums: one container with PodResources.
var PodUsage = func() usage.List {
	var r corev1.ResourceRequirements
	if err := json.Unmarshal([]byte(PodResources), &r); err != nil {
		panic(err)
	}
	return clusterview.PodUsage(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Resources: r}}}})
}()

// EdgeObjects calls yield with the Ingress and the HTTPRoute of tenant i's
// namespace t<i>-ns<j>, each serving its own host under the tenant's domain
// (web.ns<j>.t<i>.example.com and api.ns<j>.t<i>.example.com), as the
// informers hand them to the view.
func EdgeObjects(i, j int, yield func(clusterview.Object)) {
	ns := fmt.Sprintf("t%d-ns%d", i, j)
	yield(clusterview.Object{Group: "networking.k8s.io", Kind: "Ingress", Resource: "ingresses", Namespace: ns, Name: "web",
		Hosts: []string{fmt.Sprintf("web.ns%d.t%d.example.com", j, i)}})
	yield(clusterview.Object{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute", Resource: "httproutes", Namespace: ns, Name: "api",
		Hosts: []string{fmt.Sprintf("api.ns%d.t%d.example.com", j, i)}})
}

// Fill adds the objects of Objects to a view, the same calls the informers
// make: the Ingresses and routes to the host index alone, as their
// informers do (no tenant quota of the scale registry counts them).
func Fill(v *clusterview.View, tenants, namespaces, pods int) {
	Objects(tenants, namespaces, pods, func(o clusterview.Object) {
		if len(o.Hosts) > 0 {
			v.UpdateHosts(nil, &o)
			return
		}
		v.Upsert(o)
	})
}

// Namespaces are the names and tenants of the namespaces Fill creates.
func Namespaces(tenants, namespaces int) []struct{ Name, Tenant string } {
	out := make([]struct{ Name, Tenant string }, 0, tenants*namespaces)
	for i := range tenants {
		for j := range namespaces {
			out = append(out, struct{ Name, Tenant string }{fmt.Sprintf("t%d-ns%d", i, j), fmt.Sprintf("t%d", i)})
		}
	}
	return out
}

// PodSpec is an ordinary pod spec that every rule admits.
const PodSpec = `{"containers":[{"name":"web","image":"nginx","ports":[{"containerPort":80}],"resources":` + PodResources + `}],"volumes":[{"name":"tmp","emptyDir":{}}]}`

// PodCreate is an AdmissionReview of tenant's owner creating a pod with spec
// in the tenant's namespace the corpus uses (ns3).
func PodCreate(tenant int, spec string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"t%[1]d-ns%[3]d","name":"web","operation":"CREATE","userInfo":{"username":"u%[1]d","groups":["system:authenticated"]},"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"t%[1]d-ns%[3]d","managedFields":[{"manager":"kubectl"}]},"spec":%[2]s}}}`, tenant, spec, corpusNamespace)
}
