package engine

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/usage"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// TestUsageReadFromTheRequestIsTheDecodedObjects holds podOf, claimOf and
// deviceClaimOf,
// which read the request's values, to the usage of the object decoded
// whole as the API server's types.
func TestUsageReadFromTheRequestIsTheDecodedObjects(t *testing.T) {
	pods := map[string]string{
		"containers and an init container":         `{"spec":{"initContainers":[{"name":"i","resources":{"requests":{"cpu":"2","memory":"1Gi"}}}],"containers":[{"name":"a","resources":{"requests":{"cpu":"100m"},"limits":{"cpu":1,"memory":"512Mi"}}},{"name":"b","resources":{"limits":{"ephemeral-storage":"1Gi","nvidia.com/gpu":"1"}}}]}}`,
		"a native sidecar, overhead and pod-level": `{"spec":{"overhead":{"cpu":"250m"},"resources":{"requests":{"memory":"2Gi"}},"initContainers":[{"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"50m"}}}],"containers":[{"name":"a","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}`,
		"a resize allocated":                       `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}}]},"status":{"phase":"Running","containerStatuses":[{"name":"a","allocatedResources":{"cpu":"2"},"resources":{"requests":{"cpu":"2"},"limits":{"cpu":"3"}}}]}}`,
		"a resize found infeasible":                `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"8"}}}]},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"},{"type":"PodResizePending","status":"True","reason":"Infeasible"}],"containerStatuses":[{"name":"a","allocatedResources":{"cpu":"1"},"resources":{"requests":{"cpu":"1"}}}]}}`,
		"a resize deferred":                        `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"8"}}}]},"status":{"phase":"Running","conditions":[{"type":"PodResizePending","status":"True","reason":"Deferred"}],"containerStatuses":[{"name":"a","allocatedResources":{"cpu":"1"},"resources":{"requests":{"cpu":"1"}}}]}}`,
		"overhead, with the pod-level status":      `{"spec":{"overhead":{"cpu":"250m"},"containers":[{"name":"a","resources":{"requests":{"cpu":"1"},"limits":{"cpu":"1"}}}]},"status":{"phase":"Running","allocatedResources":{"cpu":"1250m"},"resources":{"requests":{"cpu":"1250m"},"limits":{"cpu":"1250m"}},"containerStatuses":[{"name":"a","allocatedResources":{"cpu":"1"},"resources":{"requests":{"cpu":"1"},"limits":{"cpu":"1"}}}]}}`,
		"finished":                                 `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}}]},"status":{"phase":"Failed"}}`,
		"nothing named":                            `{"spec":{"containers":[{"name":"a"}]}}`,
	}
	for name, raw := range pods {
		t.Run(name, func(t *testing.T) {
			var typed corev1.Pod
			if err := json.Unmarshal([]byte(raw), &typed); err != nil {
				t.Fatal(err)
			}
			obj, err := admission.ParseObject([]byte(raw))
			if err != nil {
				t.Fatal(err)
			}
			read, err := podOf(obj)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := clusterview.PodUsage(read), clusterview.PodUsage(&typed); !slices.Equal(got, want) {
				t.Errorf("read %v, decoded %v", got, want)
			}
		})
	}
	claims := []string{
		`{"spec":{"storageClassName":"fast","resources":{"requests":{"storage":"10Gi"}}},"status":{"allocatedResources":{"storage":"12Gi"}}}`,
		`{"metadata":{"annotations":{"volume.beta.kubernetes.io/storage-class":"old"}},"spec":{"storageClassName":"new","resources":{"requests":{"storage":"1Gi"}}}}`,
		`{"metadata":{"annotations":{"volume.beta.kubernetes.io/storage-class":""}},"spec":{"storageClassName":"new","resources":{"requests":{"storage":"1Gi"}}}}`,
	}
	for _, raw := range claims {
		var typed corev1.PersistentVolumeClaim
		if err := json.Unmarshal([]byte(raw), &typed); err != nil {
			t.Fatal(err)
		}
		obj, err := admission.ParseObject([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		read, err := claimOf(obj)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := clusterview.ClaimUsage(read), clusterview.ClaimUsage(&typed); !slices.Equal(got, want) {
			t.Errorf("claim %s: read %v, decoded %v", raw, got, want)
		}
	}
	deviceClaims := []string{
		`{"spec":{"devices":{"requests":[{"name":"a","exactly":{"deviceClassName":"gpu","allocationMode":"ExactCount","count":2}},{"name":"b","exactly":{"deviceClassName":"nic","allocationMode":"All"}}]}}}`,
		`{"spec":{"devices":{"requests":[{"name":"a","firstAvailable":[{"name":"x","deviceClassName":"gpu","count":4},{"name":"y","deviceClassName":"fpga","allocationMode":"ExactCount","count":1}]},{"name":"b","exactly":{"deviceClassName":"gpu"}}]}}}`,
		`{"spec":{"devices":{}}}`,
	}
	for _, raw := range deviceClaims {
		var typed resourcev1.ResourceClaim
		if err := json.Unmarshal([]byte(raw), &typed); err != nil {
			t.Fatal(err)
		}
		read, err := deviceClaimOf(mustParse(t, raw))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := clusterview.DeviceClaimUsage(read), clusterview.DeviceClaimUsage(&typed); !slices.Equal(got, want) {
			t.Errorf("resource claim %s: read %v, decoded %v", raw, got, want)
		}
	}
	// resource.k8s.io/v1beta1's exact request is the request itself
	beta, err := deviceClaimOf(mustParse(t, `{"spec":{"devices":{"requests":[{"name":"a","deviceClassName":"gpu","count":3},{"name":"b","deviceClassName":"nic","allocationMode":"All"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := clusterview.DeviceClaimUsage(beta), (usage.List{{Key: "gpu.deviceclass.resource.k8s.io/devices", N: 3}, {Key: "nic.deviceclass.resource.k8s.io/devices", N: 32}}); !slices.Equal(got, want) {
		t.Errorf("a v1beta1 claim: read %v, want %v", got, want)
	}
	if _, err := podOf(mustParse(t, `{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"lots"}}}]}}`)); err == nil {
		t.Error("a quantity the API server would refuse must be an error")
	}
	if _, err := deviceClaimOf(mustParse(t, `{"spec":{"devices":{"requests":[{"name":"a","exactly":{"deviceClassName":"gpu","count":1.5}}]}}}`)); err == nil {
		t.Error("a count the API server would refuse must be an error")
	}
}

func mustParse(t *testing.T, raw string) ast.Object {
	t.Helper()
	obj, err := admission.ParseObject([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return obj
}
