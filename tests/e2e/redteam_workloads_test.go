package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// wantPlaced checks the pod setUp created as the API server stored it:
// the mutating webhook gave it red's RuntimeClass, node selector and
// toleration, and the API server's RuntimeClass admission, run again after
// the webhook changed the pod, added the class's overhead.
func wantPlaced(t *testing.T, mallory kubernetes.Interface) {
	t.Helper()
	p, err := mallory.CoreV1().Pods("red-dev").Get(t.Context(), "target", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := p.Spec
	pool := corev1.Toleration{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "red", Effect: corev1.TaintEffectNoSchedule}
	if s.RuntimeClassName == nil || *s.RuntimeClassName != "gvisor" || s.NodeSelector["pool"] != "red" || !slices.Contains(s.Tolerations, pool) {
		t.Fatalf("the pod was not placed: runtimeClassName %v, nodeSelector %v, tolerations %v", ptrText(s.RuntimeClassName), s.NodeSelector, s.Tolerations)
	}
	if want := resource.MustParse("64Mi"); !s.Overhead.Memory().Equal(want) {
		t.Errorf("pod overhead %v; want gvisor's %v, which the RuntimeClass admission plugin sets", s.Overhead, want)
	}
}

// imageRoutes pull from elsewhere than registry.example, or with another
// pull policy than Always, in every carrier and every container sort.
func imageRoutes(mallory kubernetes.Interface, dyn dynamic.Interface) []route {
	from := func(image string, extra map[string]any) map[string]any {
		c := container("c", extra)
		c["image"] = image
		return map[string]any{"containers": []any{c}}
	}
	var out []route
	for _, c := range carriers {
		out = append(out, route{c.kind + " pulling from quay.io", "image-registry", func(ctx context.Context) error {
			return create(ctx, dyn, c, "quay-"+strings.ToLower(c.kind), from("quay.io/evil/miner:1", nil), dryRun)
		}})
	}
	for i, tt := range []struct{ name, image string }{
		{"a host that starts with the allowed one", "registry.example.evil.io/app:1"},
		{"the allowed host on another port", "registry.example:5000/app:1"},
		{"a Docker Hub namespace named like the registry", "registry-example/app:1"},
		{"a Docker Hub image by its full name", "docker.io/library/nginx:1.27"},
		{"a bare official image", "nginx"},
		{"a digest from another registry", "ghcr.io/evil/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
	} {
		out = append(out, route{"an image from " + tt.name, "image-registry", func(ctx context.Context) error {
			return create(ctx, dyn, carrierOf("Pod"), fmt.Sprintf("look-alike-%d", i), from(tt.image, nil), dryRun)
		}})
	}
	quay := container("i", nil)
	quay["image"] = "quay.io/tools/setup:1"
	sidecar := container("s", map[string]any{"restartPolicy": "Always"})
	sidecar["image"] = "quay.io/tools/proxy:1"
	out = append(out,
		route{"an init container pulling from quay.io", "image-registry", func(ctx context.Context) error {
			return create(ctx, dyn, carrierOf("Job"), "init-quay", map[string]any{"initContainers": []any{quay}, "containers": []any{container("c", nil)}}, dryRun)
		}},
		route{"a native sidecar pulling from quay.io", "image-registry", func(ctx context.Context) error {
			return create(ctx, dyn, carrierOf("Deployment"), "sidecar-quay", map[string]any{"initContainers": []any{sidecar}, "containers": []any{container("c", nil)}}, dryRun)
		}},
		route{"an ephemeral debug container from quay.io (kubectl debug)", "image-registry", func(ctx context.Context) error {
			p, err := mallory.CoreV1().Pods("red-dev").Get(ctx, "target", metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "quay.io/tools/debug:1", ImagePullPolicy: corev1.PullAlways,
			}})
			_, err = mallory.CoreV1().Pods("red-dev").UpdateEphemeralContainers(ctx, "target", p, metav1.UpdateOptions{})
			return err
		}},
		route{"an update swapping a running pod's image", "image-registry", func(ctx context.Context) error {
			p, err := mallory.CoreV1().Pods("red-dev").Get(ctx, "target", metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Spec.Containers[0].Image = "quay.io/evil/miner:1"
			_, err = mallory.CoreV1().Pods("red-dev").Update(ctx, p, metav1.UpdateOptions{})
			return err
		}},
		route{"a strategic merge patch swapping a Deployment's image", "image-registry", func(ctx context.Context) error {
			patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"quay.io/evil/miner:1"}]}}}}`)
			_, err := mallory.AppsV1().Deployments("red-dev").Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			return err
		}},
		route{"a pod created by a controller's service account", "image-registry", func(ctx context.Context) error {
			controller := cluster.As("system:serviceaccount:kube-system:replicaset-controller", "system:serviceaccounts", "system:serviceaccounts:kube-system")
			_, err := controller.CoreV1().Pods("red-dev").Create(ctx, pod("from-controller", func(s *corev1.PodSpec) { s.Containers[0].Image = "quay.io/evil/miner:1" }), dryRun)
			return err
		}},
	)
	for _, pull := range []string{"Never", "IfNotPresent"} {
		out = append(out, route{"imagePullPolicy " + pull + ", which runs what another tenant pulled", "image-pull-policy", func(ctx context.Context) error {
			return create(ctx, dyn, carrierOf("CronJob"), "pull-"+strings.ToLower(pull), from("registry.example/app:1", map[string]any{"imagePullPolicy": pull}), dryRun)
		}})
	}
	out = append(out, route{"a tagged image with no pull policy (defaulted to IfNotPresent)", "image-pull-policy", func(ctx context.Context) error {
		c := container("c", nil)
		delete(c, "imagePullPolicy")
		return create(ctx, dyn, carrierOf("Pod"), "pull-default", map[string]any{"containers": []any{c}}, dryRun)
	}})
	return out
}

// placementRoutes leave red's sandboxed runtime or node pool.
func placementRoutes(mallory kubernetes.Interface, dyn dynamic.Interface) []route {
	with := func(field string, value any) map[string]any {
		return map[string]any{field: value, "containers": []any{container("c", nil)}}
	}
	var out []route
	for _, kind := range []string{"Pod", "CronJob", "StatefulSet"} {
		out = append(out,
			route{kind + " with RuntimeClass kata-qemu", "runtime-class", func(ctx context.Context) error {
				return create(ctx, dyn, carrierOf(kind), "kata-"+strings.ToLower(kind), with("runtimeClassName", "kata-qemu"), dryRun)
			}},
			route{kind + " with nodeSelector pool=blue", "node-placement", func(ctx context.Context) error {
				return create(ctx, dyn, carrierOf(kind), "blue-"+strings.ToLower(kind), with("nodeSelector", map[string]any{"pool": "blue"}), dryRun)
			}},
		)
	}
	out = append(out,
		route{"a pod naming its node (skipping the scheduler)", "node-placement", func(ctx context.Context) error {
			return create(ctx, dyn, carrierOf("Pod"), "pinned", with("nodeName", "node-1"), dryRun)
		}},
		route{"a Deployment naming its node in its template", "node-placement", func(ctx context.Context) error {
			return create(ctx, dyn, carrierOf("Deployment"), "pinned", with("nodeName", "node-1"), dryRun)
		}},
		route{"a JSON patch moving a Deployment to another pool", "node-placement", func(ctx context.Context) error {
			patch := []byte(`[{"op": "add", "path": "/spec/template/spec/nodeSelector/pool", "value": "blue"}]`)
			_, err := mallory.AppsV1().Deployments("red-dev").Patch(ctx, "web", types.JSONPatchType, patch, metav1.PatchOptions{})
			return err
		}},
		route{"a JSON patch moving a Deployment to another RuntimeClass", "runtime-class", func(ctx context.Context) error {
			patch := []byte(`[{"op": "replace", "path": "/spec/template/spec/runtimeClassName", "value": "kata-qemu"}]`)
			_, err := mallory.AppsV1().Deployments("red-dev").Patch(ctx, "web", types.JSONPatchType, patch, metav1.PatchOptions{})
			return err
		}},
	)
	return out
}

func ptrText(p *string) string {
	if p == nil {
		return "<none>"
	}
	return *p
}
