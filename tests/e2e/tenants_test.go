package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tenantguard/tenantguard/tests/live"
)

const tenantLabel = "tenantguard.io/tenant"

// TestTenantLifecycle plays a tenant's day against the real API server, step
// by step; later steps use the namespaces earlier ones created.
func TestTenantLifecycle(t *testing.T) {
	alice := cluster.As("alice")
	bob := cluster.As("bob")
	carol := cluster.As("carol", "gas-team")

	t.Run("an owner creates a namespace and it gets the tenant label", func(t *testing.T) {
		ns, err := alice.CoreV1().Namespaces().Create(t.Context(), namespace("oil-dev", nil), metav1.CreateOptions{})
		wantAllowed(t, err)
		if got := ns.Labels[tenantLabel]; got != "oil" {
			t.Fatalf("tenant label = %q, want oil", got)
		}
	})

	t.Run("a user who owns no tenant is refused a namespace in one", func(t *testing.T) {
		_, err := bob.CoreV1().Namespaces().Create(t.Context(), namespace("oil-bob", nil), metav1.CreateOptions{})
		wantDenied(t, err, "namespace-ownership")
	})

	t.Run("a group owner creates a namespace in the group's tenant", func(t *testing.T) {
		ns, err := carol.CoreV1().Namespaces().Create(t.Context(), namespace("gas-a", nil), metav1.CreateOptions{})
		wantAllowed(t, err)
		if got := ns.Labels[tenantLabel]; got != "gas" {
			t.Fatalf("tenant label = %q, want gas", got)
		}
	})

	t.Run("the namespace quota refuses the fourth namespace", func(t *testing.T) {
		for _, name := range []string{"oil-stage", "oil-prod"} {
			_, err := alice.CoreV1().Namespaces().Create(t.Context(), namespace(name, nil), metav1.CreateOptions{})
			wantAllowed(t, err)
		}
		eventually(t, "the fourth namespace refused", func(ctx context.Context) error {
			_, err := alice.CoreV1().Namespaces().Create(ctx, namespace("oil-qa", nil), dryRun)
			return denialOf(err, "namespace-quota")
		})
		_, err := alice.CoreV1().Namespaces().Create(t.Context(), namespace("oil-qa", nil), metav1.CreateOptions{})
		wantDenied(t, err, "namespace-quota")
	})

	t.Run("an owner cannot move a namespace to another tenant", func(t *testing.T) {
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"gas"}}}`, tenantLabel)
		_, err := alice.CoreV1().Namespaces().Patch(t.Context(), "oil-dev", types.MergePatchType, patch, metav1.PatchOptions{})
		wantDenied(t, err, "tenant-label-immutable")
	})

	t.Run("a pod without a PriorityClass gets the tenant default", func(t *testing.T) {
		p, err := alice.CoreV1().Pods("oil-dev").Create(t.Context(), pod("web"), metav1.CreateOptions{})
		wantAllowed(t, err)
		if p.Spec.PriorityClassName != "tenant-low" || p.Spec.Priority == nil || *p.Spec.Priority != 1000 {
			t.Fatalf("priorityClassName %q priority %v, want tenant-low 1000", p.Spec.PriorityClassName, p.Spec.Priority)
		}
	})

	t.Run("a pod with a PriorityClass the tenant may not use is refused", func(t *testing.T) {
		_, err := alice.CoreV1().Pods("oil-dev").Create(t.Context(), pod("urgent", func(s *corev1.PodSpec) { s.PriorityClassName = "batch-high" }), metav1.CreateOptions{})
		wantDenied(t, err, "priority-class")
	})

	t.Run("a hostPath pod is refused", func(t *testing.T) {
		_, err := alice.CoreV1().Pods("oil-dev").Create(t.Context(), pod("logs", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}}}
		}), metav1.CreateOptions{})
		wantDenied(t, err, "host-path")
	})

	t.Run("a Deployment with hostNetwork is refused", func(t *testing.T) {
		_, err := alice.AppsV1().Deployments("oil-dev").Create(t.Context(), deployment("sniffer", func(s *corev1.PodSpec) { s.HostNetwork = true }), metav1.CreateOptions{})
		wantDenied(t, err, "host-network")
	})

	t.Run("a claim without a StorageClass gets the tenant default", func(t *testing.T) {
		c, err := alice.CoreV1().PersistentVolumeClaims("oil-dev").Create(t.Context(), claim("data", nil), metav1.CreateOptions{})
		wantAllowed(t, err)
		if c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != "standard" {
			t.Fatalf("storageClassName %v, want standard", c.Spec.StorageClassName)
		}
	})

	t.Run("a claim with a StorageClass the tenant may not use is refused", func(t *testing.T) {
		fast := "fast"
		_, err := alice.CoreV1().PersistentVolumeClaims("oil-dev").Create(t.Context(), claim("fast", &fast), metav1.CreateOptions{})
		wantDenied(t, err, "storage-class")
	})

	t.Run("a LoadBalancer is refused in oil and allowed in gas", func(t *testing.T) {
		_, err := alice.CoreV1().Services("oil-dev").Create(t.Context(), loadBalancer("edge"), metav1.CreateOptions{})
		wantDenied(t, err, "service-type")
		_, err = carol.CoreV1().Services("gas-a").Create(t.Context(), loadBalancer("edge"), metav1.CreateOptions{})
		wantAllowed(t, err)
	})

	t.Run("a registry change takes effect: the tenant-wide pod count spans namespaces", func(t *testing.T) {
		before := metric(t, `tenantguard_generation{source="registry"}`)
		start := time.Now()
		updateRegistry(t, func(doc string) string { return strings.Replace(doc, "pods: 20", "pods: 2", 1) })
		for metric(t, `tenantguard_generation{source="registry"}`) == before {
			if time.Since(start) > 10*time.Second {
				t.Fatal("the registry change was not loaded within 10s")
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("registry change in force %s after the ConfigMap update", time.Since(start).Round(time.Millisecond))
		// oil has one pod (oil-dev/web); a second in another namespace fits.
		_, err := alice.CoreV1().Pods("oil-stage").Create(t.Context(), pod("worker"), metav1.CreateOptions{})
		wantAllowed(t, err)
		eventually(t, "the third pod refused", func(ctx context.Context) error {
			_, err := alice.CoreV1().Pods("oil-prod").Create(ctx, pod("extra"), dryRun)
			return denialOf(err, "tenant-quota")
		})
		_, err = alice.CoreV1().Pods("oil-prod").Create(t.Context(), pod("extra"), metav1.CreateOptions{})
		wantDenied(t, err, "tenant-quota")
	})

	t.Run("an invalid registry is refused and the last good one stays in force", func(t *testing.T) {
		updateRegistry(t, func(doc string) string {
			// with room for 20 pods again: were it put in force, the pod
			// below would be admitted
			doc = strings.Replace(doc, "pods: 2\n", "pods: 20\n", 1)
			return strings.Replace(doc, "namespaceQuota: 3", "namespaceQuota: 3\n    namespaceQuotas: 9", 1)
		})
		eventually(t, "a RegistryRefused event on the ConfigMap", func(ctx context.Context) error {
			events, err := cluster.Client.CoreV1().Events(live.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=RegistryRefused"})
			if err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.InvolvedObject.Name == live.RegistryName && strings.Contains(e.Message, "namespaceQuotas") {
					return nil
				}
			}
			return errors.New("no event yet")
		})
		if got := metric(t, `tenantguard_reload_last_failed{source="registry"}`); !strings.HasSuffix(got, " 1") {
			t.Fatalf("reload failure metric = %q, want 1", got)
		}
		// The pod limit of the last good registry (2) still holds, not the
		// refused one's (20).
		_, err := alice.CoreV1().Pods("oil-prod").Create(t.Context(), pod("extra"), metav1.CreateOptions{})
		wantDenied(t, err, "tenant-quota")
	})

	t.Run("a registry counting a resource tenantguard cannot watch is refused", func(t *testing.T) {
		// deploy/rbac does not let tenantguard list secrets.
		updateRegistry(t, func(doc string) string {
			doc = strings.Replace(doc, "\n    namespaceQuotas: 9", "", 1) // valid again
			return strings.Replace(doc, "pods: 20\n", "pods: 20\n      count/secrets: 5\n", 1)
		})
		eventually(t, "a RegistryRefused event naming the counted resources", func(ctx context.Context) error {
			events, err := cluster.Client.CoreV1().Events(live.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=RegistryRefused"})
			if err != nil {
				return err
			}
			for _, e := range events.Items {
				if strings.Contains(e.Message, "counted resources cannot be watched") {
					return nil
				}
			}
			return errors.New("no event yet")
		})
		if err := cluster.Ready(); err != nil {
			t.Fatalf("not ready after a refused registry: %v", err)
		}
		_, err := alice.CoreV1().Pods("oil-prod").Create(t.Context(), pod("extra"), metav1.CreateOptions{})
		wantDenied(t, err, "tenant-quota") // the registry with pods: 2 is still in force, not the refused one's 20
	})

	t.Run("only owners delete their namespaces, and only administrators those of a tenant protecting them", func(t *testing.T) {
		err := bob.CoreV1().Namespaces().Delete(t.Context(), "gas-a", metav1.DeleteOptions{})
		wantDenied(t, err, "namespace-ownership")
		err = alice.CoreV1().Namespaces().Delete(t.Context(), "oil-prod", metav1.DeleteOptions{})
		wantDenied(t, err, "namespace-deletion") // oil sets preventNamespaceDeletion
		wantAllowed(t, cluster.As("platform-admin").CoreV1().Namespaces().Delete(t.Context(), "oil-prod", metav1.DeleteOptions{}))
	})

	t.Run("every denial is one decision log line with the rule ids", func(t *testing.T) {
		logs := cluster.Logs.String()
		for _, want := range []string{`"msg":"denied","user":"bob","operation":"CREATE","kind":"Namespace"`, `"deny":["host-network"]`} {
			if !strings.Contains(logs, want) {
				t.Errorf("no log line containing %s", want)
			}
		}
	})
}

// denialOf is nil when err is tenantguard's denial naming rule.
func denialOf(err error, rule string) error {
	if err == nil {
		return errors.New("allowed")
	}
	if !strings.Contains(err.Error(), "["+rule+"] ") {
		return err
	}
	return nil
}

func claim(name string, class *string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// loadBalancer is a LoadBalancer Service without node ports (gas may not
// use NodePort).
func loadBalancer(name string) *corev1.Service {
	s := service(name, corev1.ServiceTypeLoadBalancer)
	s.Spec.AllocateLoadBalancerNodePorts = new(bool)
	return s
}

// updateRegistry edits the document in the shared cluster's registry ConfigMap.
func updateRegistry(t *testing.T, edit func(string) string) {
	t.Helper()
	setRegistryDoc(t, cluster, edit(registryDoc(t, cluster)))
}
