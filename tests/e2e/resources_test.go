package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/tenantguard/tenantguard/internal/cli"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/tests/live"
)

// asking gives a pod's container a CPU request of cpu, and 64Mi of memory.
func asking(cpu string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Mi")}
	}
}

// TestABurstOfPodsAgainstATenantResourceQuota sends 50 parallel creates of
// pods asking for 100m of CPU through a real API server, against a tenant
// resource quota of 1500m with 500m in use in another of its namespaces:
// room for 10. One replica and two strict replicas must admit exactly 10;
// two local replicas may overshoot by one room, and the figure is logged.
// Two tenants' bursts run at once in the last scenario, each exact.
func TestABurstOfPodsAgainstATenantResourceQuota(t *testing.T) {
	ctx := t.Context()
	c, err := live.Start(ctx, live.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	scenarios := []struct {
		tenants  []string
		replicas int
		args     []string
		most     int
	}{
		{[]string{"sum-one"}, 1, nil, room},
		{[]string{"sum-local"}, 2, nil, 2 * room},
		{[]string{"sum-strict"}, 2, []string{"--quota-mode=strict"}, room},
		{[]string{"sum-a", "sum-b"}, 2, []string{"--quota-mode=strict"}, room},
	}
	var tenants strings.Builder
	for _, s := range scenarios {
		for _, name := range s.tenants {
			fmt.Fprintf(&tenants, "  - name: %s\n    owners: [{kind: User, name: burster}]\n    resourceQuota: {hard: {requests.cpu: 1500m}}\n", name)
		}
	}
	addTenants(t, c, tenants.String())
	grantLedgers(t, c)
	admin := fastClient(t, c.Admin)
	for _, s := range scenarios {
		for _, name := range s.tenants {
			for _, ns := range []string{name + "-ns", name + "-busy"} {
				eventually(t, "namespace "+ns, func(ctx context.Context) error {
					_, err := admin.CoreV1().Namespaces().Create(ctx, namespace(ns, map[string]string{tenantLabel: name}), metav1.CreateOptions{})
					return err
				})
			}
			// 500m in use in the tenant's other namespace, admitted by the
			// server under test.
			eventually(t, "the busy pod of "+name, func(ctx context.Context) error {
				_, err := admin.CoreV1().Pods(name+"-busy").Create(ctx, pod("busy", asking("500m")), metav1.CreateOptions{})
				return err
			})
		}
	}
	for _, s := range scenarios {
		t.Run(fmt.Sprintf("%v: %d replicas %v", s.tenants, s.replicas, s.args), func(t *testing.T) {
			behindBalancer(t, c, s.replicas, s.args...)
			n := len(s.tenants)
			admitted, refused, elapsed := parallelCreates(t, n*burst, "tenant-resource-quota", func(ctx context.Context, i int) error {
				_, err := admin.CoreV1().Pods(s.tenants[i%n]+"-ns").Create(ctx, pod(fmt.Sprintf("p%02d", i/n), asking("100m")), metav1.CreateOptions{})
				return err
			})
			t.Logf("%v: %d of %d pods of 100m admitted (room for %d each), %d refused by tenant-resource-quota, burst took %v", s.tenants, admitted, n*burst, room, refused, elapsed.Round(1e6))
			if admitted+refused != n*burst {
				t.Fatalf("%d admitted + %d refused by tenant-resource-quota, want %d", admitted, refused, n*burst)
			}
			for _, name := range s.tenants {
				stored := storedPods(t, admin, name+"-ns")
				if stored < room || stored > s.most {
					t.Fatalf("tenant %s: %d pods stored, want %d to %d", name, stored, room, s.most)
				}
			}
			if s.args != nil {
				for _, name := range s.tenants {
					cm, err := admin.CoreV1().ConfigMaps(live.Namespace).Get(ctx, quota.NamePrefix+name+".usage", metav1.GetOptions{})
					if err != nil {
						t.Fatalf("the strict ledger of usage: %v", err)
					}
					if got := strings.Count(cm.Data["claims"], `"expires"`); got != room {
						t.Fatalf("the ledger of usage of %s holds %d entries, want the %d admitted", name, got, room)
					}
				}
			}
		})
	}
}

func storedPods(t *testing.T, client kubernetes.Interface, namespace string) int {
	t.Helper()
	pods, err := client.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(pods.Items)
}

// TestTheRoutesAroundATenantResourceQuota tries the ways a tenant could
// take more than its resource quota through a real API server: pods made by
// a controller (a ReplicaSet's, as its controller creates them when a
// Deployment is scaled up: this control plane runs no controller manager),
// an init container asking for more than the containers, requests given as
// limits only, an in-place resize, a claim's expansion, and resources set at
// pod level; then `tenantguard status` reads the sums from the cluster.
func TestTheRoutesAroundATenantResourceQuota(t *testing.T) {
	ctx := t.Context()
	c, err := live.Start(ctx, live.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	addTenants(t, c, "  - name: capped\n    owners: [{kind: User, name: capper}]\n    resourceQuota: {hard: {requests.cpu: \"1\", requests.storage: 10Gi, gpu.example.com.deviceclass.resource.k8s.io/devices: \"2\"}}\n")
	// In force once its owner's namespaces are labelled for it: starting the
	// ResourceClaims' informer delays it.
	eventually(t, "capped in force", func(ctx context.Context) error {
		created, err := c.As("capper").CoreV1().Namespaces().Create(ctx, namespace("capped-probe", nil), dryRun)
		if err == nil && created.Labels[tenantLabel] != "capped" {
			err = fmt.Errorf("labels %v", created.Labels)
		}
		return err
	})
	admin := fastClient(t, c.Admin)
	const ns = "capped-apps"
	eventually(t, "namespace "+ns, func(ctx context.Context) error {
		_, err := admin.CoreV1().Namespaces().Create(ctx, namespace(ns, map[string]string{tenantLabel: "capped"}), metav1.CreateOptions{})
		return err
	})
	eventually(t, "a pod of 600m", func(ctx context.Context) error {
		_, err := admin.CoreV1().Pods(ns).Create(ctx, pod("base", asking("600m")), metav1.CreateOptions{})
		return err
	})
	controller := c.AsOnly("system:serviceaccount:kube-system:replicaset-controller", "system:serviceaccounts", "system:serviceaccounts:kube-system")
	refused := func(t *testing.T, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "[tenant-resource-quota]") {
			t.Fatalf("want a refusal by tenant-resource-quota, got %v", err)
		}
		t.Log(err)
	}
	t.Run("a ReplicaSet's pods count when its Deployment is scaled up", func(t *testing.T) {
		made := pod("web-7d9f-abcde", asking("300m"))
		made.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f", UID: "0d6f8c1e-0000-4000-8000-000000000001"}}
		if _, err := controller.CoreV1().Pods(ns).Create(ctx, made, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the first replica fits: %v", err)
		}
		second := made.DeepCopy()
		second.Name = "web-7d9f-fghij"
		_, err := controller.CoreV1().Pods(ns).Create(ctx, second, metav1.CreateOptions{})
		refused(t, err)
	})
	t.Run("an init container asking for more than the containers", func(t *testing.T) {
		p := pod("migrate", asking("50m"))
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example/app:1", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}
		_, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		refused(t, err)
	})
	t.Run("requests given as limits only", func(t *testing.T) {
		p := pod("limited", func(s *corev1.PodSpec) {
			s.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
		})
		_, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		refused(t, err)
	})
	t.Run("an in-place resize past the room", func(t *testing.T) {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, "base", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("900m")
		_, err = admin.CoreV1().Pods(ns).UpdateResize(ctx, "base", p, metav1.UpdateOptions{})
		refused(t, err)
	})
	t.Run("a claim's expansion past the room", func(t *testing.T) {
		expand := true
		class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "expandable"}, Provisioner: "example.com/none", AllowVolumeExpansion: &expand}
		if _, err := admin.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		claim := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &class.Name,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Gi")}},
			},
		}
		claim, err := admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("8Gi fits in 10Gi: %v", err)
		}
		second := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "more"}, Spec: *claim.Spec.DeepCopy()}
		_, err = admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, second, metav1.CreateOptions{})
		refused(t, err)
		// Bound, as the volume controller would bind it, so that the API
		// server lets its request grow.
		claim.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: claim.Spec.Resources.Requests}
		if claim, err = admin.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		claim.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("12Gi")
		_, err = admin.CoreV1().PersistentVolumeClaims(ns).Update(ctx, claim, metav1.UpdateOptions{})
		refused(t, err)
	})
	t.Run("resources set at pod level count, and spare the containers naming theirs", func(t *testing.T) {
		// 900m of the 1 CPU is in use: the base pod and the replica.
		atPodLevel := func(cpu string) func(*corev1.PodSpec) {
			return func(s *corev1.PodSpec) {
				s.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
			}
		}
		_, err := admin.CoreV1().Pods(ns).Create(ctx, pod("pod-level-large", atPodLevel("500m")), metav1.CreateOptions{})
		refused(t, err)
		if !strings.Contains(err.Error(), `Pod "pod-level-large" asks for 500m`) {
			t.Fatalf("refused for another reason than its pod-level 500m: %v", err)
		}
		// Its container names no CPU request, which ResourceQuota requires
		// of a pod without resources at pod level.
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod("pod-level-small", atPodLevel("50m")), metav1.CreateOptions{}); err != nil {
			t.Fatalf("50m at pod level fits in the 100m left: %v", err)
		}
	})
	t.Run("a ResourceClaim's devices past the room, alternatives counting their largest", func(t *testing.T) {
		claim := func(name string, requests ...resourcev1.DeviceRequest) *resourcev1.ResourceClaim {
			return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: requests}}}
		}
		gpus := func(name string, n int64) resourcev1.DeviceRequest {
			return resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com", Count: n}}
		}
		// One device in use by a claim tenantguard is not asked about (the
		// control plane's own requests are not sent to it): only its
		// informer, through the cache's transform, can count it.
		if _, err := c.AsOnly("system:kube-controller-manager", "system:masters").ResourceV1().ResourceClaims(ns).Create(ctx, claim("seen", gpus("gpu", 1)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// A claim's alternatives count the most any of them asks: 2, not 1.
		either := claim("either", resourcev1.DeviceRequest{Name: "gpu", FirstAvailable: []resourcev1.DeviceSubRequest{
			{Name: "two", DeviceClassName: "gpu.example.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2},
			{Name: "one", DeviceClassName: "gpu.example.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1},
		}})
		eventually(t, "the informer's claim counted", func(ctx context.Context) error {
			_, err := admin.ResourceV1().ResourceClaims(ns).Create(ctx, either, dryRun)
			if err == nil || !strings.Contains(err.Error(), `ResourceClaim "either" asks for 2 and 1 is in use`) {
				return fmt.Errorf("want the 2 devices refused beside the 1 seen, got %w", err)
			}
			return nil
		})
		// The one device left, taken by a claim the control plane makes
		// from a pod's ResourceClaimTemplate, as kube-controller-manager does
		// under its controllers' own service accounts.
		made := claim("worker-gpu-x7k2p", gpus("gpu", 1))
		if _, err := c.AsOnly("system:serviceaccount:kube-system:resource-claim-controller", "system:serviceaccounts", "system:serviceaccounts:kube-system").
			ResourceV1().ResourceClaims(ns).Create(ctx, made, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the last device fits: %v", err)
		}
		_, err := admin.ResourceV1().ResourceClaims(ns).Create(ctx, claim("more", gpus("gpu", 1)), metav1.CreateOptions{})
		refused(t, err)
	})
	// status runs `tenantguard status -o json` against the cluster.
	status := func(t *testing.T) (code int, out, errOut *bytes.Buffer) {
		t.Helper()
		kubeconfig := filepath.Join(t.TempDir(), "admin.kubeconfig")
		if err := c.WriteKubeconfig(kubeconfig); err != nil {
			t.Fatal(err)
		}
		out, errOut = &bytes.Buffer{}, &bytes.Buffer{}
		code = cli.RunContext(ctx, []string{"status", "--kubeconfig", kubeconfig, "-o", "json"}, strings.NewReader(""), out, errOut)
		return code, out, errOut
	}
	t.Run("tenantguard status reads the sums from the cluster", func(t *testing.T) {
		code, out, errOut := status(t)
		if code != 0 {
			t.Fatalf("tenantguard status: exit %d: %s", code, errOut.String())
		}
		var rows []struct{ Tenant, Resource, Used, Hard string }
		if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		// the base pod, the replica and the pod-level one; the claim; the
		// ResourceClaims
		want := map[string][2]string{"requests.cpu": {"950m", "1"}, "requests.storage": {"8Gi", "10Gi"}, "gpu.example.com.deviceclass.resource.k8s.io/devices": {"2", "2"}}
		for _, r := range rows {
			if r.Tenant != "capped" {
				continue
			}
			if w, ok := want[r.Resource]; ok && (r.Used != w[0] || r.Hard != w[1]) {
				t.Errorf("capped's %s: %s of %s, want %s of %s", r.Resource, r.Used, r.Hard, w[0], w[1])
			}
			delete(want, r.Resource)
		}
		if len(want) > 0 {
			t.Errorf("no rows for capped's %v in %s", want, out.String())
		}
	})

	t.Run("tenantguard status fails on a counted resource whose group's discovery fails, rather than count 0", func(t *testing.T) {
		// an aggregated API whose server is not there: the API server lists
		// its group and answers 503 for its resources
		apiServices := dynamic.NewForConfigOrDie(c.Admin).Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
		broken := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
			"metadata": map[string]any{"name": "v1.broken.example.com"},
			"spec": map[string]any{
				"group": "broken.example.com", "version": "v1", "groupPriorityMinimum": int64(100), "versionPriority": int64(10),
				"insecureSkipTLSVerify": true, "service": map[string]any{"namespace": "default", "name": "nowhere", "port": int64(443)},
			},
		}}
		if _, err := apiServices.Create(ctx, broken, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = apiServices.Delete(context.WithoutCancel(ctx), "v1.broken.example.com", metav1.DeleteOptions{})
		})
		eventually(t, "the API server failing the group's discovery", func(context.Context) error {
			_, _, err := c.Client.Discovery().ServerGroupsAndResources()
			if err == nil || !strings.Contains(err.Error(), "broken.example.com") {
				return fmt.Errorf("discovery: %w", err)
			}
			return nil
		})
		doc := registryDoc(t, c)
		t.Cleanup(func() { setRegistryDoc(t, c, doc) })
		const capped = "  - name: capped\n    owners: [{kind: User, name: capper}]\n"
		if !strings.Contains(doc, capped) {
			t.Fatalf("no tenant capped in the registry:\n%s", doc)
		}
		setRegistryDoc(t, c, strings.Replace(doc, capped, capped+"    quotas: {count/widgets.broken.example.com: 5}\n", 1))
		code, out, errOut := status(t)
		if code == 0 || !strings.Contains(errOut.String(), "broken.example.com") {
			t.Fatalf("tenantguard status: exit %d, stdout %s, stderr %q; want a failure naming the group whose discovery failed", code, out.String(), errOut.String())
		}
	})
}
