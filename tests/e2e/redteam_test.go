package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/tenantguard/tenantguard/generator"
)

// red is the tenant of the red team: mallory owns it. It may mount /var/log
// read-only and use LoadBalancer Services (not NodePort), StorageClass
// standard (no default) and PriorityClass tenant-low, images of
// registry.example pulled Always, RuntimeClass gvisor (the default), and
// runs on the nodes labelled pool=red; it holds two
// namespaces, two Services and a ServiceAccount owner whose namespace is
// "builds".
const red = `
  - name: red
    owners:
      - {kind: User, name: mallory}
      - {kind: ServiceAccount, name: "system:serviceaccount:builds:deployer"}
    namespaceQuota: 2
    pods:
      allowedHostPaths: [{pathPrefix: /var/log, readOnly: true}]
    priorityClasses: {allowed: [tenant-low]}
    storageClasses: {allowed: [standard]}
    services: {allowLoadBalancer: true}
    images: {allowedRegistries: [registry.example], allowedPullPolicies: [Always]}
    runtimeClasses: {allowed: [gvisor], default: gvisor}
    nodePlacement:
      nodeSelector: {pool: red}
      tolerations: [{key: pool, operator: Equal, value: red, effect: NoSchedule}]
    quotas: {services: 2}
    companions:
      resourceQuota: {hard: {pods: "50"}}
      limitRange: {limits: [{type: Container, default: {cpu: 200m}}]}
`

// route is one way around a rule a malicious tenant owner tries; rule is
// the rule tenantguard must refuse it with.
type route struct {
	name, rule string
	try        func(ctx context.Context) error
}

// TestAMaliciousTenantOwner plays mallory, owner of tenant red, trying every
// route around each rule we found, through the real API server: every pod
// spec carrier with every host access, hostPath prefix tricks, updates,
// subresources, dry runs and server-side apply, label and annotation games,
// identity look-alikes, namespace claims and squatting, companions edited
// or deleted, classes, Service types and quotas. mallory is in a group
// RBAC makes cluster-admin, so each refusal is tenantguard's; the last
// routes use only what tenantguard's generated RBAC grants her.
func TestAMaliciousTenantOwner(t *testing.T) {
	ctx := t.Context()
	addTenants(t, cluster, red)
	mallory := cluster.As("mallory")
	dyn := cluster.DynamicAs("mallory")
	eventually(t, "red in force: mallory's namespaces are labelled red", func(ctx context.Context) error {
		ns, err := mallory.CoreV1().Namespaces().Create(ctx, namespace("red-dev", nil), dryRun)
		if err == nil && ns.Labels[tenantLabel] != "red" {
			err = fmt.Errorf("labels %v", ns.Labels)
		}
		return err
	})
	for _, name := range []string{"red-dev", "red-two"} {
		_, err := mallory.CoreV1().Namespaces().Create(ctx, namespace(name, nil), metav1.CreateOptions{})
		wantAllowed(t, err)
	}
	eventually(t, "red-dev's companions", func(ctx context.Context) error {
		found, err := companions(ctx, "red-dev")
		if err != nil {
			return err
		}
		for _, name := range []string{"ResourceQuota/" + generator.ResourceQuotaName, "LimitRange/" + generator.LimitRangeName, "NetworkPolicy/" + generator.NetworkPolicyName, "RoleBinding/tenantguard-owner-admin"} {
			if _, ok := found[name]; !ok {
				return fmt.Errorf("no %s yet", name)
			}
		}
		return nil
	})
	setUp(t, mallory)

	routes := append(podSpecRoutes(dyn), hostPathRoutes(dyn)...)
	routes = append(routes, workloadRoutes(mallory, dyn)...)
	routes = append(routes, namespaceRoutes(mallory)...)
	routes = append(routes, identityRoutes()...)
	routes = append(routes, companionRoutes(mallory)...)
	routes = append(routes, classAndServiceRoutes(mallory, dyn)...)
	routes = append(routes, imageRoutes(mallory, dyn)...)
	routes = append(routes, placementRoutes(mallory, dyn)...)
	refused := 0
	for _, r := range routes {
		t.Run(r.name, func(t *testing.T) {
			wantDenied(t, r.try(t.Context()), r.rule)
			refused++
		})
	}
	t.Logf("%d routes tried through the API server, %d refused by tenantguard with the expected rule", len(routes), refused)
}

// setUp creates what the update routes start from: a plain pod and a
// plain Deployment in red-dev, and the two Services red's quota allows.
func setUp(t *testing.T, mallory kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	_, err := mallory.CoreV1().Pods("red-dev").Create(ctx, pod("target"), metav1.CreateOptions{})
	wantAllowed(t, err)
	wantPlaced(t, mallory)
	_, err = mallory.AppsV1().Deployments("red-dev").Create(ctx, deployment("web", func(*corev1.PodSpec) {}), metav1.CreateOptions{})
	wantAllowed(t, err)
	for _, name := range []string{"one", "two"} {
		_, err = mallory.CoreV1().Services("red-dev").Create(ctx, service(name, corev1.ServiceTypeClusterIP), metav1.CreateOptions{})
		wantAllowed(t, err)
	}
	eventually(t, "the view holds both Services", func(ctx context.Context) error {
		_, err := mallory.CoreV1().Services("red-two").Create(ctx, service("three", corev1.ServiceTypeClusterIP), dryRun)
		return denialOf(err, "tenant-quota")
	})
}

// carrier wraps a pod spec the way one kind carries it.
type carrier struct {
	gvr  schema.GroupVersionResource
	kind string
	wrap func(spec map[string]any) map[string]any
}

func template(spec map[string]any) map[string]any {
	return map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}}, "spec": spec}
}

func selected(spec map[string]any) map[string]any {
	return map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "x"}}, "template": template(spec)}
}

func withRestart(spec map[string]any, policy string) map[string]any {
	out := maps.Clone(spec)
	out["restartPolicy"] = policy
	return out
}

// carrierOf is the carrier of kind.
func carrierOf(kind string) carrier {
	i := slices.IndexFunc(carriers, func(c carrier) bool { return c.kind == kind })
	return carriers[i]
}

// carriers are every kind with a pod spec tenantguard routes.
var carriers = []carrier{
	{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "Pod", func(s map[string]any) map[string]any { return map[string]any{"spec": s} }},
	{schema.GroupVersionResource{Version: "v1", Resource: "podtemplates"}, "PodTemplate", func(s map[string]any) map[string]any { return map[string]any{"template": template(s)} }},
	{schema.GroupVersionResource{Version: "v1", Resource: "replicationcontrollers"}, "ReplicationController", func(s map[string]any) map[string]any {
		return map[string]any{"spec": map[string]any{"selector": map[string]any{"app": "x"}, "template": template(s)}}
	}},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment", func(s map[string]any) map[string]any { return map[string]any{"spec": selected(s)} }},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, "ReplicaSet", func(s map[string]any) map[string]any { return map[string]any{"spec": selected(s)} }},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, "DaemonSet", func(s map[string]any) map[string]any { return map[string]any{"spec": selected(s)} }},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, "StatefulSet", func(s map[string]any) map[string]any {
		spec := selected(s)
		spec["serviceName"] = "x"
		return map[string]any{"spec": spec}
	}},
	{schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, "Job", func(s map[string]any) map[string]any {
		return map[string]any{"spec": map[string]any{"template": template(withRestart(s, "Never"))}}
	}},
	{schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}, "CronJob", func(s map[string]any) map[string]any {
		return map[string]any{"spec": map[string]any{"schedule": "* * * * *", "jobTemplate": map[string]any{"spec": map[string]any{"template": template(withRestart(s, "Never"))}}}}
	}},
}

// container is a plain container with extra fields.
func container(name string, extra map[string]any) map[string]any {
	c := map[string]any{"name": name, "image": "registry.example/app:1", "imagePullPolicy": "Always"}
	maps.Copy(c, extra)
	return c
}

// hostAccess are the host accesses a pod spec can ask for, each with the
// rule that refuses it in red.
var hostAccess = []struct {
	name, rule string
	spec       map[string]any
}{
	{"a hostPath volume of /", "host-path", map[string]any{
		"volumes":    []any{map[string]any{"name": "h", "hostPath": map[string]any{"path": "/"}}},
		"containers": []any{container("c", map[string]any{"volumeMounts": []any{map[string]any{"name": "h", "mountPath": "/host"}}})},
	}},
	{"a hostPath volume mounted by no container", "host-path", map[string]any{
		"volumes":    []any{map[string]any{"name": "h", "hostPath": map[string]any{"path": "/var/run/docker.sock"}}},
		"containers": []any{container("c", nil)},
	}},
	{"hostNetwork", "host-network", map[string]any{"hostNetwork": true, "containers": []any{container("c", nil)}}},
	{"hostPID", "host-namespaces", map[string]any{"hostPID": true, "containers": []any{container("c", nil)}}},
	{"hostIPC", "host-namespaces", map[string]any{"hostIPC": true, "containers": []any{container("c", nil)}}},
	{"a hostPort", "host-ports", map[string]any{"containers": []any{container("c", map[string]any{"ports": []any{map[string]any{"containerPort": 80, "hostPort": 80}}})}}},
	{"a hostPort in an init container", "host-ports", map[string]any{
		"initContainers": []any{container("i", map[string]any{"ports": []any{map[string]any{"containerPort": 81, "hostPort": 81}}})},
		"containers":     []any{container("c", nil)},
	}},
	{"a privileged container", "privileged", map[string]any{"containers": []any{container("c", map[string]any{"securityContext": map[string]any{"privileged": true}})}}},
	{"a privileged native sidecar", "privileged", map[string]any{
		"initContainers": []any{container("s", map[string]any{"restartPolicy": "Always", "securityContext": map[string]any{"privileged": true}})},
		"containers":     []any{container("c", nil)},
	}},
}

// podSpecRoutes try every host access in every carrier.
func podSpecRoutes(dyn dynamic.Interface) []route {
	var out []route
	for _, c := range carriers {
		for i, h := range hostAccess {
			out = append(out, route{fmt.Sprintf("%s with %s", c.kind, h.name), h.rule, func(ctx context.Context) error {
				return create(ctx, dyn, c, fmt.Sprintf("%s-%d", strings.ToLower(c.kind), i), h.spec, metav1.CreateOptions{})
			}})
		}
	}
	return out
}

// hostPathRoutes are prefix tricks against red's read-only /var/log grant.
// Paths with ".." never reach tenantguard: the API server refuses them.
func hostPathRoutes(dyn dynamic.Interface) []route {
	podWith := func(path string, readOnly bool) map[string]any {
		return map[string]any{
			"volumes":    []any{map[string]any{"name": "h", "hostPath": map[string]any{"path": path}}},
			"containers": []any{container("c", map[string]any{"volumeMounts": []any{map[string]any{"name": "h", "mountPath": "/h", "readOnly": readOnly}}})},
		}
	}
	var out []route
	for i, tt := range []struct {
		name, path string
		readOnly   bool
	}{
		{"a sibling of the granted prefix (/var/logs)", "/var/logs", true},
		{"a parent of the granted prefix (/var)", "/var", true},
		{"the granted prefix mounted writable", "/var/log", false},
		{"a path under the prefix mounted writable", "/var/log/pods", false},
		{"a relative path", "var/log", true},
	} {
		out = append(out, route{"hostPath " + tt.name, "host-path", func(ctx context.Context) error {
			return create(ctx, dyn, carrierOf("Pod"), fmt.Sprintf("hostpath-%d", i), podWith(tt.path, tt.readOnly), metav1.CreateOptions{})
		}})
	}
	return out
}

// workloadRoutes bring host access in other ways than a plain create.
func workloadRoutes(mallory kubernetes.Interface, dyn dynamic.Interface) []route {
	hostNetwork := map[string]any{"hostNetwork": true, "containers": []any{container("c", nil)}}
	return []route{
		{"a dry-run create of a privileged pod", "privileged", func(ctx context.Context) error {
			return create(ctx, dyn, carrierOf("Pod"), "dry", map[string]any{"containers": []any{container("c", map[string]any{"securityContext": map[string]any{"privileged": true}})}}, dryRun)
		}},
		{"a server-side apply of a hostNetwork pod", "host-network", func(ctx context.Context) error {
			body, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "applied"}, "spec": hostNetwork})
			force := true
			_, err := dyn.Resource(carrierOf("Pod").gvr).Namespace("red-dev").Patch(ctx, "applied", types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "mallory", Force: &force})
			return err
		}},
		{"an update putting a Deployment on the host network", "host-network", func(ctx context.Context) error {
			d, err := mallory.AppsV1().Deployments("red-dev").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Spec.Template.Spec.HostNetwork = true
			_, err = mallory.AppsV1().Deployments("red-dev").Update(ctx, d, metav1.UpdateOptions{})
			return err
		}},
		{"a JSON patch making a Deployment's container privileged", "privileged", func(ctx context.Context) error {
			patch := []byte(`[{"op": "add", "path": "/spec/template/spec/containers/0/securityContext", "value": {"privileged": true}}]`)
			_, err := mallory.AppsV1().Deployments("red-dev").Patch(ctx, "web", types.JSONPatchType, patch, metav1.PatchOptions{})
			return err
		}},
		{"a privileged ephemeral container added to a running pod", "privileged", func(ctx context.Context) error {
			p, err := mallory.CoreV1().Pods("red-dev").Get(ctx, "target", metav1.GetOptions{})
			if err != nil {
				return err
			}
			privileged := true
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "registry.example/debug:1", ImagePullPolicy: corev1.PullAlways, SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
			}})
			_, err = mallory.CoreV1().Pods("red-dev").UpdateEphemeralContainers(ctx, "target", p, metav1.UpdateOptions{})
			return err
		}},
	}
}

// namespaceRoutes are namespace claims, moves and label games.
func namespaceRoutes(mallory kubernetes.Interface) []route {
	relabel := func(c kubernetes.Interface, edit func(labels map[string]string), update func(context.Context, kubernetes.Interface, *corev1.Namespace) error) func(context.Context) error {
		return func(ctx context.Context) error {
			ns, err := c.CoreV1().Namespaces().Get(ctx, "red-dev", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			edit(ns.Labels)
			return update(ctx, c, ns)
		}
	}
	plain := func(ctx context.Context, c kubernetes.Interface, ns *corev1.Namespace) error {
		_, err := c.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
		return err
	}
	status := func(ctx context.Context, c kubernetes.Interface, ns *corev1.Namespace) error {
		_, err := c.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{})
		return err
	}
	finalize := func(ctx context.Context, c kubernetes.Interface, ns *corev1.Namespace) error {
		_, err := c.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
		return err
	}
	toOil := func(l map[string]string) { l[tenantLabel] = "oil" }
	privileged := func(l map[string]string) { l["pod-security.kubernetes.io/enforce"] = "privileged" }
	createNS := func(c kubernetes.Interface, name string, labels map[string]string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := c.CoreV1().Namespaces().Create(ctx, namespace(name, labels), dryRun)
			return err
		}
	}
	bob := cluster.As("bob")
	return []route{
		{"a namespace in another tenant's prefix", "namespace-prefix", createNS(mallory, "oil-red", nil)},
		{"a namespace in a tenant's prefix by someone owning nothing", "namespace-ownership", createNS(bob, "red-bob", nil)},
		{"a namespace labelled into another tenant", "namespace-ownership", createNS(mallory, "red-oil", map[string]string{tenantLabel: "oil"})},
		{"a namespace labelled with a tenant that does not exist", "namespace-ownership", createNS(mallory, "red-ghost", map[string]string{tenantLabel: "ghost"})},
		{"a protected namespace name", "protected-namespace", createNS(mallory, "kube-red", map[string]string{tenantLabel: "red"})},
		{"a namespace without the tenant prefix", "namespace-prefix", createNS(mallory, "staging", nil)},
		{"a third namespace past the namespace quota", "namespace-quota", createNS(mallory, "red-three", nil)},
		{"a namespace created with a protected label", "protected-metadata", createNS(mallory, "red-priv", map[string]string{"pod-security.kubernetes.io/enforce": "privileged"})},
		{"squatting the namespace of red's ServiceAccount owner (bob owns nothing)", "namespace-ownership", createNS(bob, "builds", nil)},
		{"moving a namespace to another tenant", "tenant-label-immutable", relabel(mallory, toOil, plain)},
		{"dropping the tenant label", "tenant-label-immutable", relabel(mallory, func(l map[string]string) { delete(l, tenantLabel) }, plain)},
		{"relaxing pod security with a protected label", "protected-metadata", relabel(mallory, privileged, plain)},
		{"moving a namespace through namespaces/status", "tenant-label-immutable", relabel(mallory, toOil, status)},
		{"relaxing pod security through namespaces/status", "protected-metadata", relabel(mallory, privileged, status)},
		{"moving a namespace through namespaces/finalize", "tenant-label-immutable", relabel(mallory, toOil, finalize)},
		{"relaxing pod security through namespaces/finalize", "protected-metadata", relabel(mallory, privileged, finalize)},
		{"deleting another tenant's namespace (bob deletes red-dev)", "namespace-ownership", func(ctx context.Context) error {
			return bob.CoreV1().Namespaces().Delete(ctx, "red-dev", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}},
	}
}

// identityRoutes are requesters that look like administrators or the
// control plane and are not.
func identityRoutes() []route {
	move := func(c kubernetes.Interface) func(context.Context) error {
		return func(ctx context.Context) error {
			ns, err := c.CoreV1().Namespaces().Get(ctx, "red-dev", metav1.GetOptions{})
			if err != nil {
				return err
			}
			ns.Labels[tenantLabel] = "oil"
			_, err = c.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
			return err
		}
	}
	deleteQuota := func(c kubernetes.Interface) func(context.Context) error {
		return func(ctx context.Context) error {
			return c.CoreV1().ResourceQuotas("red-dev").Delete(ctx, generator.ResourceQuotaName, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}
	}
	return []route{
		{"an administrator's name in another case", "tenant-label-immutable", move(cluster.As("Platform-Admin"))},
		{"the administrators' group in another case", "tenant-label-immutable", move(cluster.As("mallory", "System:Masters"))},
		{"a group that only starts like the administrators'", "tenant-label-immutable", move(cluster.As("mallory", "system:masters-red"))},
		{"system:anonymous deleting a companion", "managed-resource", deleteQuota(cluster.As("system:anonymous"))},
		{"kube-proxy deleting a companion", "managed-resource", deleteQuota(cluster.As("system:kube-proxy"))},
		{"a service account of a namespace named like kube-system", "managed-resource", deleteQuota(cluster.As("system:serviceaccount:kube-systemx:generic-garbage-collector"))},
		{"a user named like tenantguard's service account", "managed-resource", deleteQuota(cluster.As("system:serviceaccount:tenantguard-system:tenantguard-x"))},
	}
}

// companionRoutes edit, delete or forge the companions tenantguard keeps in
// red's namespaces, as cluster-admin and with only the generated RBAC.
func companionRoutes(mallory kubernetes.Interface) []route {
	onlyGenerated := cluster.AsOnly("mallory")
	del := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	return []route{
		{"deleting the owners' RoleBinding with the admin role tenantguard granted", "managed-resource", func(ctx context.Context) error {
			return onlyGenerated.RbacV1().RoleBindings("red-dev").Delete(ctx, "tenantguard-owner-admin", del)
		}},
		{"deleting the NetworkPolicy with the admin role tenantguard granted", "managed-resource", func(ctx context.Context) error {
			return onlyGenerated.NetworkingV1().NetworkPolicies("red-dev").Delete(ctx, generator.NetworkPolicyName, del)
		}},
		{"adding a subject to the owners' RoleBinding", "managed-resource", func(ctx context.Context) error {
			rb, err := onlyGenerated.RbacV1().RoleBindings("red-dev").Get(ctx, "tenantguard-owner-admin", metav1.GetOptions{})
			if err != nil {
				return err
			}
			rb.Subjects = append(rb.Subjects, rb.Subjects[0])
			rb.Subjects[len(rb.Subjects)-1].Name = "eve"
			_, err = onlyGenerated.RbacV1().RoleBindings("red-dev").Update(ctx, rb, metav1.UpdateOptions{})
			return err
		}},
		{"raising the ResourceQuota", "managed-resource", func(ctx context.Context) error {
			q, err := mallory.CoreV1().ResourceQuotas("red-dev").Get(ctx, generator.ResourceQuotaName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("5000")
			_, err = mallory.CoreV1().ResourceQuotas("red-dev").Update(ctx, q, metav1.UpdateOptions{})
			return err
		}},
		{"raising the ResourceQuota's enforced limits through resourcequotas/status", "managed-resource", func(ctx context.Context) error {
			q, err := mallory.CoreV1().ResourceQuotas("red-dev").Get(ctx, generator.ResourceQuotaName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			q.Status.Hard = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("5000")}
			_, err = mallory.CoreV1().ResourceQuotas("red-dev").UpdateStatus(ctx, q, metav1.UpdateOptions{})
			return err
		}},
		{"stripping the managed-by label to take the LimitRange over", "managed-resource", func(ctx context.Context) error {
			lr, err := mallory.CoreV1().LimitRanges("red-dev").Get(ctx, generator.LimitRangeName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			delete(lr.Labels, generator.ManagedByLabel)
			_, err = mallory.CoreV1().LimitRanges("red-dev").Update(ctx, lr, metav1.UpdateOptions{})
			return err
		}},
		{"deleting the LimitRange", "managed-resource", func(ctx context.Context) error {
			return mallory.CoreV1().LimitRanges("red-dev").Delete(ctx, generator.LimitRangeName, del)
		}},
		{"forging a companion", "managed-resource", func(ctx context.Context) error {
			lr, err := mallory.CoreV1().LimitRanges("red-dev").Get(ctx, generator.LimitRangeName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			lr.ObjectMeta = metav1.ObjectMeta{Name: "fake", Labels: lr.Labels}
			_, err = mallory.CoreV1().LimitRanges("red-dev").Create(ctx, lr, dryRun)
			return err
		}},
	}
}

// classAndServiceRoutes are StorageClasses, PriorityClasses, Service types
// and quota counts.
func classAndServiceRoutes(mallory kubernetes.Interface, dyn dynamic.Interface) []route {
	fast, none := "fast", ""
	claimWith := func(name string, class *string, annotations map[string]string) func(context.Context) error {
		return func(ctx context.Context) error {
			c := claim(name, class)
			c.Annotations = annotations
			_, err := mallory.CoreV1().PersistentVolumeClaims("red-dev").Create(ctx, c, dryRun)
			return err
		}
	}
	standard := "standard"
	svc := func(s *corev1.Service) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := mallory.CoreV1().Services("red-two").Create(ctx, s, dryRun)
			return err
		}
	}
	noAlloc := false
	lbNamedPort := service("lb-port", corev1.ServiceTypeLoadBalancer)
	lbNamedPort.Spec.AllocateLoadBalancerNodePorts = &noAlloc
	lbNamedPort.Spec.Ports[0].NodePort = 30080
	external := service("ext", corev1.ServiceTypeClusterIP)
	external.Spec.ExternalIPs = []string{"192.0.2.10"}
	externalName := service("name", corev1.ServiceTypeExternalName)
	externalName.Spec.ExternalName, externalName.Spec.Ports = "example.com", nil
	return []route{
		{"a claim naming no StorageClass, red having no default", "storage-class", claimWith("classless", nil, nil)},
		{"a claim of a StorageClass red may not use", "storage-class", claimWith("fast", &fast, nil)},
		{"a claim of no class at all (\"\")", "storage-class", claimWith("none", &none, nil)},
		{"the legacy StorageClass annotation over an allowed class", "storage-class", claimWith("legacy", &standard, map[string]string{"volume.beta.kubernetes.io/storage-class": "fast"})},
		{"a StatefulSet claim template of a StorageClass red may not use", "storage-class", func(ctx context.Context) error {
			spec := map[string]any{"containers": []any{container("c", nil)}}
			c := carrierOf("StatefulSet")
			obj := c.wrap(spec)
			obj["spec"].(map[string]any)["volumeClaimTemplates"] = []any{map[string]any{"metadata": map[string]any{"name": "data"}, "spec": map[string]any{
				"storageClassName": "fast", "accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}},
			}}}
			return createObject(ctx, dyn, c, "sts-claim", obj, dryRun)
		}},
		{"a generic ephemeral volume of a StorageClass red may not use", "storage-class", func(ctx context.Context) error {
			spec := map[string]any{"containers": []any{container("c", nil)}, "volumes": []any{map[string]any{"name": "scratch", "ephemeral": map[string]any{"volumeClaimTemplate": map[string]any{"spec": map[string]any{
				"storageClassName": "fast", "accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}},
			}}}}}}
			return create(ctx, dyn, carrierOf("Pod"), "ephemeral", spec, dryRun)
		}},
		{"a PriorityClass red may not use", "priority-class", func(ctx context.Context) error {
			return create(ctx, dyn, carrierOf("Pod"), "critical", map[string]any{"priorityClassName": "system-node-critical", "containers": []any{container("c", nil)}}, dryRun)
		}},
		{"a Deployment with a PriorityClass red may not use", "priority-class", func(ctx context.Context) error {
			return create(ctx, dyn, carrierOf("Deployment"), "critical", map[string]any{"priorityClassName": "system-cluster-critical", "containers": []any{container("c", nil)}}, dryRun)
		}},
		{"a NodePort Service", "service-type", svc(service("np", corev1.ServiceTypeNodePort))},
		{"an ExternalName Service", "service-type", svc(externalName)},
		{"a LoadBalancer allocating node ports", "service-type", svc(service("lb", corev1.ServiceTypeLoadBalancer))},
		{"a LoadBalancer naming a node port", "service-type", svc(lbNamedPort)},
		{"a Service with externalIPs", "external-ips", svc(external)},
		{"an update turning a ClusterIP Service into a NodePort", "service-type", func(ctx context.Context) error {
			s, err := mallory.CoreV1().Services("red-dev").Get(ctx, "one", metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Spec.Type = corev1.ServiceTypeNodePort
			_, err = mallory.CoreV1().Services("red-dev").Update(ctx, s, metav1.UpdateOptions{})
			return err
		}},
		{"a third Service past red's tenant-wide quota, in its other namespace", "tenant-quota", svc(service("three", corev1.ServiceTypeClusterIP))},
	}
}

// create creates a carrier of spec named name in red-dev.
func create(ctx context.Context, dyn dynamic.Interface, c carrier, name string, spec map[string]any, opts metav1.CreateOptions) error {
	return createObject(ctx, dyn, c, name, c.wrap(spec), opts)
}

func createObject(ctx context.Context, dyn dynamic.Interface, c carrier, name string, obj map[string]any, opts metav1.CreateOptions) error {
	u := &unstructured.Unstructured{Object: maps.Clone(obj)}
	u.SetAPIVersion(c.gvr.GroupVersion().String())
	u.SetKind(c.kind)
	u.SetName(name)
	_, err := dyn.Resource(c.gvr).Namespace("red-dev").Create(ctx, u, opts)
	return err
}

func service(name string, typ corev1.ServiceType) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{{Port: 80}}},
	}
}
