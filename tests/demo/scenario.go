package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// step is one request of the demo, sent as user.
type step struct {
	user          string
	groups        []string
	what          string
	expectAllowed bool
	// do sends the request and describes what the API server stored.
	do func(context.Context, kubernetes.Interface) (string, error)
}

func (s step) who() string {
	if len(s.groups) > 0 {
		return s.user + " (" + strings.Join(s.groups, ",") + ")"
	}
	return s.user
}

func scenario() []step {
	return []step{
		{user: "alice", what: "create namespace oil-dev", expectAllowed: true, do: createNamespace("oil-dev")},
		{user: "bob", what: "create namespace oil-bob", do: createNamespace("oil-bob")},
		{user: "carol", groups: []string{"gas-team"}, what: "create namespace gas-web", expectAllowed: true, do: createNamespace("gas-web")},
		{user: "alice", what: "create namespace gas-stolen", do: createNamespace("gas-stolen")},
		{user: "alice", what: "create namespace kube-mine", do: createNamespace("kube-mine")},
		{user: "alice", what: "relabel oil-dev into tenant gas", do: func(ctx context.Context, c kubernetes.Interface) (string, error) {
			ns, err := c.CoreV1().Namespaces().Patch(ctx, "oil-dev", types.MergePatchType, []byte(`{"metadata":{"labels":{"tenantguard.io/tenant":"gas"}}}`), metav1.PatchOptions{})
			return tenantOf(ns), err
		}},
		{user: "alice", what: "pod oil-dev/web", expectAllowed: true, do: createPod("web", func(*corev1.PodSpec) {})},
		{user: "alice", what: "pod oil-dev/debug with hostNetwork+hostPath", do: createPod("debug", func(s *corev1.PodSpec) {
			s.HostNetwork = true
			s.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		})},
		{user: "alice", what: "pod oil-dev/miner pulling quay.io/evil/miner", do: createPod("miner", func(s *corev1.PodSpec) { s.Containers[0].Image = "quay.io/evil/miner:1" })},
		{user: "alice", what: "pod oil-dev/pinned on node pool gas", do: createPod("pinned", func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"pool": "gas"} })},
		{user: "alice", what: "pod oil-dev/urgent in PriorityClass batch-high", do: createPod("urgent", func(s *corev1.PodSpec) { s.PriorityClassName = "batch-high" })},
		{user: "alice", what: "deployment oil-dev/agent with hostPID", do: func(ctx context.Context, c kubernetes.Interface) (string, error) {
			labels := map[string]string{"app": "agent"}
			spec := podSpec()
			spec.HostPID = true
			_, err := c.AppsV1().Deployments("oil-dev").Create(ctx, &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "agent"},
				Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
			}, metav1.CreateOptions{})
			return "", err
		}},
		{user: "alice", what: "claim oil-dev/data (no StorageClass)", expectAllowed: true, do: createClaim("oil-dev", "data", nil)},
		{user: "alice", what: "claim oil-dev/fast in StorageClass fast", do: createClaim("oil-dev", "fast", ptr("fast"))},
		{user: "alice", what: "LoadBalancer service oil-dev/edge", do: createLoadBalancer("oil-dev")},
		{user: "carol", groups: []string{"gas-team"}, what: "LoadBalancer service gas-web/edge", expectAllowed: true, do: createLoadBalancer("gas-web")},
		{user: "alice", what: "delete networkpolicy oil-dev/tenantguard-isolation", do: func(ctx context.Context, c kubernetes.Interface) (string, error) {
			// The reconciler creates it a fraction of a second after the namespace.
			for range 50 {
				if _, err := c.NetworkingV1().NetworkPolicies("oil-dev").Get(ctx, "tenantguard-isolation", metav1.GetOptions{}); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			return "", c.NetworkingV1().NetworkPolicies("oil-dev").Delete(ctx, "tenantguard-isolation", metav1.DeleteOptions{})
		}},
		{user: "bob", what: "delete namespace gas-web", do: func(ctx context.Context, c kubernetes.Interface) (string, error) {
			return "", c.CoreV1().Namespaces().Delete(ctx, "gas-web", metav1.DeleteOptions{})
		}},
	}
}

func createNamespace(name string) func(context.Context, kubernetes.Interface) (string, error) {
	return func(ctx context.Context, c kubernetes.Interface) (string, error) {
		ns, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return tenantOf(ns), err
	}
}

func tenantOf(ns *corev1.Namespace) string {
	if ns == nil {
		return ""
	}
	return "stored with label tenantguard.io/tenant=" + ns.Labels["tenantguard.io/tenant"]
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", ImagePullPolicy: corev1.PullAlways}}}
}

func createPod(name string, edit func(*corev1.PodSpec)) func(context.Context, kubernetes.Interface) (string, error) {
	return func(ctx context.Context, c kubernetes.Interface) (string, error) {
		spec := podSpec()
		edit(&spec)
		p, err := c.CoreV1().Pods("oil-dev").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("stored with priorityClassName=%s priority=%d runtimeClassName=%s nodeSelector=%v tolerations=%d", p.Spec.PriorityClassName, *p.Spec.Priority, ptrValue(p.Spec.RuntimeClassName), p.Spec.NodeSelector, len(p.Spec.Tolerations)), nil
	}
}

func createClaim(namespace, name string, class *string) func(context.Context, kubernetes.Interface) (string, error) {
	return func(ctx context.Context, c kubernetes.Interface) (string, error) {
		claim, err := c.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: class,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return "stored with storageClassName=" + *claim.Spec.StorageClassName, nil
	}
}

func createLoadBalancer(namespace string) func(context.Context, kubernetes.Interface) (string, error) {
	return func(ctx context.Context, c kubernetes.Interface) (string, error) {
		svc, err := c.CoreV1().Services(namespace).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "edge"},
			// no node ports: gas may not use NodePort
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: ptr(false), Ports: []corev1.ServicePort{{Port: 443}}},
		}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return "stored with type=" + string(svc.Spec.Type), nil
	}
}

func ptr[T any](v T) *T { return &v }

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
