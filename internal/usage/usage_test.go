package usage

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func ctr(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

// equal compares resource lists by quantity value.
func equal(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		o, ok := b[k]
		if !ok || q.Cmp(o) != 0 {
			return false
		}
	}
	return true
}

func TestPod(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name string
		pod  corev1.Pod
		want corev1.ResourceList
	}{
		{"containers are summed, requests and limits apart",
			corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
				ctr("a", list("cpu", "100m", "memory", "64Mi"), list("cpu", "200m")),
				ctr("b", list("cpu", "300m", "memory", "64Mi"), list("cpu", "1")),
			}}},
			list("requests.cpu", "400m", "limits.cpu", "1200m", "requests.memory", "128Mi")},
		{"an init container asking for more than the containers sets the request",
			corev1.Pod{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{ctr("migrate", list("cpu", "2"), nil)},
				Containers:     []corev1.Container{ctr("app", list("cpu", "500m"), nil)},
			}},
			list("requests.cpu", "2")},
		{"a native sidecar is counted with the containers, and beside a later init container",
			corev1.Pod{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{
					{Name: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: list("cpu", "100m")}},
					ctr("migrate", list("cpu", "1"), nil),
				},
				Containers: []corev1.Container{ctr("app", list("cpu", "500m"), nil)},
			}},
			// max(100m + 1, 100m + 500m)
			list("requests.cpu", "1100m")},
		{"pod overhead is added",
			corev1.Pod{Spec: corev1.PodSpec{Overhead: list("memory", "64Mi"), Containers: []corev1.Container{ctr("app", list("memory", "1Gi"), list("memory", "1Gi"))}}},
			list("requests.memory", "1088Mi", "limits.memory", "1088Mi")},
		{"extended resources and hugepages count as requests",
			corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
				ctr("train", list("nvidia.com/gpu", "2", "hugepages-2Mi", "4Mi"), list("nvidia.com/gpu", "2", "hugepages-2Mi", "4Mi")),
			}}},
			list("requests.nvidia.com/gpu", "2", "requests.hugepages-2Mi", "4Mi")},
		{"a resize counts as soon as it is asked for",
			corev1.Pod{
				Spec:   corev1.PodSpec{Containers: []corev1.Container{ctr("app", list("cpu", "2"), nil)}},
				Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", AllocatedResources: list("cpu", "1")}}},
			},
			list("requests.cpu", "2")},
		{"a shrink counts once it is done",
			corev1.Pod{
				Spec:   corev1.PodSpec{Containers: []corev1.Container{ctr("app", list("cpu", "1"), nil)}},
				Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", AllocatedResources: list("cpu", "2"), Resources: &corev1.ResourceRequirements{Requests: list("cpu", "2")}}}},
			},
			list("requests.cpu", "2")},
		{"a running pod's overhead counts once, though the kubelet reports pod-level resources with it",
			corev1.Pod{
				Spec: corev1.PodSpec{Overhead: list("cpu", "250m"), Containers: []corev1.Container{ctr("app", list("cpu", "1"), list("cpu", "1"))}},
				Status: corev1.PodStatus{
					Phase:              corev1.PodRunning,
					AllocatedResources: list("cpu", "1250m"),
					Resources:          &corev1.ResourceRequirements{Requests: list("cpu", "1250m"), Limits: list("cpu", "1250m")},
					ContainerStatuses:  []corev1.ContainerStatus{{Name: "app", AllocatedResources: list("cpu", "1"), Resources: &corev1.ResourceRequirements{Requests: list("cpu", "1"), Limits: list("cpu", "1")}}},
				},
			},
			list("requests.cpu", "1250m", "limits.cpu", "1250m")},
		{"a resize found infeasible counts what the pod holds, not what it asks for",
			corev1.Pod{
				Spec: corev1.PodSpec{Containers: []corev1.Container{ctr("app", list("cpu", "8"), nil)}},
				Status: corev1.PodStatus{
					Conditions:        []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible}},
					ContainerStatuses: []corev1.ContainerStatus{{Name: "app", AllocatedResources: list("cpu", "1"), Resources: &corev1.ResourceRequirements{Requests: list("cpu", "1")}}},
				},
			},
			list("requests.cpu", "1")},
		{"a finished pod counts nothing",
			corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr("app", list("cpu", "1"), nil)}}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
			list()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Pod(&tt.pod); !equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCanonicalNamesAreThoseOfRequests(t *testing.T) {
	for key, want := range map[string]string{
		"cpu": "requests.cpu", "memory": "requests.memory", "ephemeral-storage": "requests.ephemeral-storage",
		"hugepages-2Mi": "requests.hugepages-2Mi", "limits.cpu": "limits.cpu", "requests.nvidia.com/gpu": "requests.nvidia.com/gpu",
	} {
		if got := Canonical(key); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestClaim(t *testing.T) {
	fast := "fast"
	tests := []struct {
		name string
		pvc  corev1.PersistentVolumeClaim
		want corev1.ResourceList
	}{
		{"a claim counts its storage in total and under its class",
			corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &fast, Resources: corev1.VolumeResourceRequirements{Requests: list("storage", "10Gi")}}},
			list("requests.storage", "10Gi", "fast.storageclass.storage.k8s.io/requests.storage", "10Gi", "fast.storageclass.storage.k8s.io/persistentvolumeclaims", "1")},
		{"the legacy annotation names the class first",
			func() corev1.PersistentVolumeClaim {
				c := corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &fast, Resources: corev1.VolumeResourceRequirements{Requests: list("storage", "1Gi")}}}
				c.Annotations = map[string]string{"volume.beta.kubernetes.io/storage-class": "slow"}
				return c
			}(),
			list("requests.storage", "1Gi", "slow.storageclass.storage.k8s.io/requests.storage", "1Gi", "slow.storageclass.storage.k8s.io/persistentvolumeclaims", "1")},
		{"capacity allocated beyond the request still counts",
			corev1.PersistentVolumeClaim{
				Spec:   corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: list("storage", "10Gi")}},
				Status: corev1.PersistentVolumeClaimStatus{AllocatedResources: list("storage", "20Gi")},
			},
			list("requests.storage", "20Gi")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Claim(&tt.pvc); !equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeviceClaim(t *testing.T) {
	exact := func(class string, mode resourcev1.DeviceAllocationMode, n int64) resourcev1.DeviceRequest {
		return resourcev1.DeviceRequest{Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class, AllocationMode: mode, Count: n}}
	}
	tests := []struct {
		name     string
		requests []resourcev1.DeviceRequest
		want     corev1.ResourceList
	}{
		{"an exact count counts that many devices of its class",
			[]resourcev1.DeviceRequest{exact("gpu", resourcev1.DeviceAllocationModeExactCount, 2)},
			list("gpu.deviceclass.resource.k8s.io/devices", "2")},
		{"a count not given counts one, as the API server defaults it",
			[]resourcev1.DeviceRequest{exact("gpu", "", 0)},
			list("gpu.deviceclass.resource.k8s.io/devices", "1")},
		{"all the devices of a pool count the most an allocation holds",
			[]resourcev1.DeviceRequest{exact("nic", resourcev1.DeviceAllocationModeAll, 0)},
			list("nic.deviceclass.resource.k8s.io/devices", "32")},
		{"requests of one class add up, each class apart",
			[]resourcev1.DeviceRequest{exact("gpu", resourcev1.DeviceAllocationModeExactCount, 2), exact("gpu", resourcev1.DeviceAllocationModeExactCount, 1), exact("fpga", resourcev1.DeviceAllocationModeExactCount, 1)},
			list("gpu.deviceclass.resource.k8s.io/devices", "3", "fpga.deviceclass.resource.k8s.io/devices", "1")},
		{"alternatives count the most any of them asks of each class",
			[]resourcev1.DeviceRequest{{FirstAvailable: []resourcev1.DeviceSubRequest{
				{DeviceClassName: "gpu", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 4},
				{DeviceClassName: "gpu", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1},
				{DeviceClassName: "fpga", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2},
			}}},
			list("gpu.deviceclass.resource.k8s.io/devices", "4", "fpga.deviceclass.resource.k8s.io/devices", "2")},
		{"a mode this version does not know counts nothing",
			[]resourcev1.DeviceRequest{exact("tpu", "Later", 3)},
			list("tpu.deviceclass.resource.k8s.io/devices", "0")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claim := resourcev1.ResourceClaim{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: tt.requests}}}
			if got := DeviceClaim(&claim); !equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSummed(t *testing.T) {
	for key, want := range map[string]string{
		"requests.cpu": "pods", "requests.nvidia.com/gpu": "pods", "requests.storage": "persistentvolumeclaims",
		"fast.storageclass.storage.k8s.io/persistentvolumeclaims": "persistentvolumeclaims",
		"gpu.example.com.deviceclass.resource.k8s.io/devices":     "resourceclaims.resource.k8s.io",
	} {
		if got := Summed(key).String(); got != want {
			t.Errorf("%s sums %s, want %s", key, got, want)
		}
	}
}

func TestCheckKey(t *testing.T) {
	tests := []struct{ key, wantErr string }{
		{"requests.cpu", ""},
		{"limits.memory", ""},
		{"cpu", ""},
		{"requests.ephemeral-storage", ""},
		{"requests.nvidia.com/gpu", ""},
		{"hugepages-2Mi", ""},
		{"requests.storage", ""},
		{"standard.storageclass.storage.k8s.io/requests.storage", ""},
		{"standard.storageclass.storage.k8s.io/persistentvolumeclaims", ""},
		{"pods", "is an object count: write it under quotas"},
		{"count/deployments.apps", "is an object count"},
		{"limits.nvidia.com/gpu", "write requests.nvidia.com/gpu"},
		{"nvidia.com/gpu", "is counted as requests.nvidia.com/gpu"},
		{"Bad_Class.storageclass.storage.k8s.io/requests.storage", "not a valid class name"},
		{"standard.storageclass.storage.k8s.io/limits.storage", "only requests.storage and persistentvolumeclaims"},
		{"requests.gpu", "is not a resource a quota sums"},
		{"requests.kubernetes.io/thing", "is not a resource a quota sums"},
		{"gpu.example.com.deviceclass.resource.k8s.io/devices", ""},
		{"gpu.deviceclass.resource.k8s.io/requests.storage", "only devices are counted"},
		{"Big_GPU.deviceclass.resource.k8s.io/devices", "not a valid class name"},
		{"requests.deviceclass.resource.kubernetes.io/gpu.example.com", `is not summed: Kubernetes counts under it the devices of DeviceClass "gpu.example.com"`},
		{"requests.deviceclass.resource.kubernetes.io/", `names DeviceClass "", which is not a valid class name`},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			err := CheckKey(tt.key)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestListsAddUp(t *testing.T) {
	l := Of(list("requests.cpu", "1500m", "requests.memory", "1Gi", "limits.cpu", "0"))
	if got := l.Key(); got != "requests.cpu=1500;requests.memory=1073741824;" {
		t.Errorf("Key() = %q; a zero amount is left out and CPU is in thousandths", got)
	}
	grown := Of(list("requests.cpu", "2", "requests.memory", "512Mi"))
	if inc := grown.Increase(l); len(inc) != 1 || inc[0] != (Amount{"requests.cpu", 500}) {
		t.Errorf("Increase = %v, want only requests.cpu 500", inc)
	}
	if l.Covers(grown) || !grown.Covers(Of(list("requests.cpu", "2"))) {
		t.Error("Covers must compare every amount of the other list")
	}
	if got := l.Max(grown).Key(); got != "requests.cpu=2000;requests.memory=1073741824;" {
		t.Errorf("Max = %q, want the larger amount of each key", got)
	}
	if got := l.Max(Of(list("limits.cpu", "3"))).Key(); got != "limits.cpu=3000;requests.cpu=1500;requests.memory=1073741824;" {
		t.Errorf("Max = %q, want the keys of both lists, sorted", got)
	}
	for _, tt := range []struct {
		key  string
		n    int64
		want string
	}{
		{"requests.cpu", 2100, "2100m"}, {"limits.cpu", 2000, "2"}, {"requests.memory", 1536 << 20, "1536Mi"},
		{"requests.storage", 10 << 30, "10Gi"}, {"requests.nvidia.com/gpu", 3, "3"}, {"requests.nvidia.com/gpu", 1000, "1000"},
		{"fast.storageclass.storage.k8s.io/persistentvolumeclaims", 2000, "2000"},
	} {
		if got := Format(tt.key, tt.n); got != tt.want {
			t.Errorf("Format(%s, %d) = %q, want %q", tt.key, tt.n, got, tt.want)
		}
	}
}

func TestRequestsDefaultToLimits(t *testing.T) {
	pod := corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr("app", nil, list("cpu", "1", "memory", "1Gi"))}}}
	if got := Pod(&pod); !equal(got, list("requests.cpu", "1", "limits.cpu", "1", "requests.memory", "1Gi", "limits.memory", "1Gi")) {
		t.Errorf("a pod giving limits only counts them as requests too, as the API server defaults them; got %v", got)
	}
	if pod.Spec.Containers[0].Resources.Requests != nil {
		t.Error("the pod given must not be changed")
	}
}

func TestPodLevelRequestsDefaultAsTheAPIServerDefaultsThem(t *testing.T) {
	podLevel := func(requests, limits corev1.ResourceList, containers ...corev1.Container) corev1.Pod {
		return corev1.Pod{Spec: corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: requests, Limits: limits}, Containers: containers}}
	}
	tests := []struct {
		name string
		pod  corev1.Pod
		want corev1.ResourceList
	}{
		{"pod-level limits alone are the pod-level requests",
			podLevel(nil, list("cpu", "8", "memory", "2Gi"), ctr("app", nil, nil)),
			list("requests.cpu", "8", "limits.cpu", "8", "requests.memory", "2Gi", "limits.memory", "2Gi")},
		{"the containers' requests are the pod-level requests when they name them",
			podLevel(nil, list("cpu", "8"), ctr("a", list("cpu", "1"), nil), ctr("b", list("cpu", "500m"), nil)),
			list("requests.cpu", "1500m", "limits.cpu", "8")},
		{"a pod-level request given stays",
			podLevel(list("cpu", "2"), list("cpu", "8"), ctr("app", nil, nil)),
			list("requests.cpu", "2", "limits.cpu", "8")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Pod(&tt.pod); !equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	given := podLevel(nil, list("cpu", "8"), ctr("app", nil, nil))
	Pod(&given)
	if given.Spec.Resources.Requests != nil {
		t.Error("the pod given must not be changed")
	}
}

func TestChargedFollowsTheQuotaEvaluator(t *testing.T) {
	deleted := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	grace := int64(30)
	deleting := corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{Time: deleted}, DeletionGracePeriodSeconds: &grace}}
	finished := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	tests := []struct {
		name    string
		pod     corev1.Pod
		at      time.Time
		charged bool
	}{
		{"a running pod counts", corev1.Pod{}, deleted, true},
		{"a finished pod does not", finished, deleted, false},
		{"a pod being deleted counts within its grace period", deleting, deleted.Add(29 * time.Second), true},
		{"and up to its end", deleting, deleted.Add(30 * time.Second), true},
		{"but not once it has passed, stuck terminating", deleting, deleted.Add(31 * time.Second), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Charged(&tt.pod, tt.at); got != tt.charged {
				t.Errorf("Charged at %s = %t, want %t", tt.at, got, tt.charged)
			}
		})
	}
	if until, ok := ChargedUntil(&deleting); !ok || !until.Equal(deleted.Add(30*time.Second)) {
		t.Errorf("ChargedUntil = %s, %t; want the end of the grace period", until, ok)
	}
	if _, ok := ChargedUntil(&corev1.Pod{}); ok {
		t.Error("a pod not being deleted has an end to its counting")
	}
}
