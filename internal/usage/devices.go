package usage

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// DeviceClaim is what a ResourceClaim counts against a resource quota, as
// the API server's quota evaluator counts it: the devices it requests of
// each DeviceClass (CLASS.deviceclass.resource.k8s.io/devices). A request
// for an exact count counts that many, one for all the devices of a pool
// the most an allocation can hold (resourcev1.AllocationResultsMaxSize),
// one with alternatives (firstAvailable) the most any of them asks of a
// class; a request of a mode or shape this version does not know counts
// nothing.
func DeviceClaim(claim *resourcev1.ResourceClaim) corev1.ResourceList {
	sums := map[string]int64{}
	for _, r := range claim.Spec.Devices.Requests {
		switch {
		case len(r.FirstAvailable) > 0:
			most := map[string]int64{}
			for _, sub := range r.FirstAvailable {
				most[sub.DeviceClassName] = max(most[sub.DeviceClassName], devices(sub.AllocationMode, sub.Count))
			}
			for class, n := range most {
				sums[class] += n
			}
		case r.Exactly != nil:
			sums[r.Exactly.DeviceClassName] += devices(r.Exactly.AllocationMode, r.Exactly.Count)
		}
	}
	out := make(corev1.ResourceList, len(sums))
	for class, n := range sums {
		out[corev1.ResourceName(class+corev1.ResourceClaimsPerClass)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return out
}

// devices is how many devices a request of mode for count devices counts.
// The API server defaults the mode to ExactCount and the count to 1; a
// manifest read offline may leave them out.
func devices(mode resourcev1.DeviceAllocationMode, count int64) int64 {
	switch mode {
	case resourcev1.DeviceAllocationModeExactCount, "":
		return max(count, 1)
	case resourcev1.DeviceAllocationModeAll:
		return resourcev1.AllocationResultsMaxSize
	}
	return 0
}
