package usage

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// native are the quota resources of pods and claims that are not prefixed
// or per class.
var native = map[string]bool{
	"cpu": true, "memory": true, "ephemeral-storage": true,
	"requests.cpu": true, "requests.memory": true, "requests.ephemeral-storage": true,
	"limits.cpu": true, "limits.memory": true, "limits.ephemeral-storage": true,
	"requests.storage": true,
}

// NativeKeys are the quota resources of pods and claims that are not
// prefixed or per class, sorted.
func NativeKeys() []string { return slices.Sorted(maps.Keys(native)) }

// CheckKey says why key is not a resource a tenant-wide resource quota can
// sum, or nil: the compute resources of pods (requests.cpu, limits.memory,
// cpu ...), hugepages, extended resources as requests.NAME, claims'
// requests.storage, per StorageClass CLASS.storageclass.storage.k8s.io/
// requests.storage or /persistentvolumeclaims, and the devices
// ResourceClaims request per DeviceClass, CLASS.deviceclass.resource.k8s.io/
// devices. Object counts (pods, count/...) belong to the registry's quotas.
func CheckKey(key string) error {
	switch {
	case native[key]:
		return nil
	case key == "pods" || key == "persistentvolumeclaims" || key == "services" || strings.HasPrefix(key, "count/"):
		return fmt.Errorf("%q is an object count: write it under quotas, not resourceQuota.hard", key)
	case strings.HasPrefix(key, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(key, corev1.DefaultResourceRequestsPrefix+corev1.ResourceHugePagesPrefix):
		return nil
	case strings.HasPrefix(key, corev1.ResourceImplicitExtendedClaimsPerClass):
		class := strings.TrimPrefix(key, corev1.ResourceImplicitExtendedClaimsPerClass)
		if errs := validation.IsDNS1123Subdomain(class); len(errs) > 0 {
			return fmt.Errorf("%q names DeviceClass %q, which is not a valid class name", key, class)
		}
		return fmt.Errorf("%q is not summed: Kubernetes counts under it the devices of DeviceClass %q that pods ask for as an extended resource and those of every ResourceClaim of the class, less what the claim's pod already counts, which needs the pods behind the scheduler's claims; %s%s sums the class's devices in ResourceClaims (the scheduler's claims for pods included, counted once they exist, never refused)", key, class, class, corev1.ResourceClaimsPerClass)
	case strings.Contains(key, deviceClassDomain):
		class, ok := strings.CutSuffix(key, corev1.ResourceClaimsPerClass)
		if !ok {
			return fmt.Errorf("%q: per DeviceClass, only devices are counted (CLASS%s)", key, corev1.ResourceClaimsPerClass)
		}
		if errs := validation.IsDNS1123Subdomain(class); len(errs) > 0 {
			return fmt.Errorf("%q names DeviceClass %q, which is not a valid class name", key, class)
		}
		return nil
	case strings.Contains(key, storageClassSuffix):
		class, what, _ := strings.Cut(key, storageClassSuffix)
		if errs := validation.IsDNS1123Subdomain(class); len(errs) > 0 {
			return fmt.Errorf("%q names StorageClass %q, which is not a valid class name", key, class)
		}
		if what != string(corev1.ResourceRequestsStorage) && what != string(corev1.ResourcePersistentVolumeClaims) {
			return fmt.Errorf("%q: per StorageClass, only requests.storage and persistentvolumeclaims are counted", key)
		}
		return nil
	case strings.HasPrefix(key, corev1.DefaultResourceRequestsPrefix) && extended(strings.TrimPrefix(key, corev1.DefaultResourceRequestsPrefix)):
		return nil
	case strings.HasPrefix(key, limitsPrefix) && extended(strings.TrimPrefix(key, limitsPrefix)):
		return fmt.Errorf("%q: extended resources are not overcommitted, so they are counted as requests only; write %s", key, corev1.DefaultResourceRequestsPrefix+strings.TrimPrefix(key, limitsPrefix))
	case extended(key):
		return fmt.Errorf("%q: an extended resource is counted as %s", key, corev1.DefaultResourceRequestsPrefix+key)
	}
	return fmt.Errorf("%q is not a resource a quota sums: write requests.cpu, limits.memory, requests.ephemeral-storage, requests.storage, CLASS.storageclass.storage.k8s.io/requests.storage, CLASS.deviceclass.resource.k8s.io/devices, or requests.DOMAIN/NAME for an extended resource", key)
}

// deviceClassDomain is the domain of the quota resources counted per
// DeviceClass (corev1.ResourceClaimsPerClass).
const deviceClassDomain = ".deviceclass.resource.k8s.io/"

// extended reports whether name is an extended resource: domain-qualified
// (vendor.example/name), outside kubernetes.io and not a quota prefix.
func extended(name string) bool {
	domain, _, ok := strings.Cut(name, "/")
	if !ok || strings.HasPrefix(name, corev1.DefaultResourceRequestsPrefix) || domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io") {
		return false
	}
	return len(validation.IsQualifiedName(name)) == 0
}

// Summed is the resource whose objects a quota resource sums:
// PersistentVolumeClaims for requests.storage and the keys per
// StorageClass, ResourceClaims for the keys per DeviceClass, pods for the
// others.
func Summed(key string) schema.GroupResource {
	switch {
	case key == string(corev1.ResourceRequestsStorage) || strings.Contains(key, storageClassSuffix):
		return schema.GroupResource{Resource: "persistentvolumeclaims"}
	case strings.HasSuffix(key, corev1.ResourceClaimsPerClass):
		return ResourceClaims
	}
	return schema.GroupResource{Resource: "pods"}
}

// ResourceClaims and ResourceClaimKind are the resource and kind of DRA's
// ResourceClaims, whose devices the keys per DeviceClass sum.
var (
	ResourceClaims    = schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}
	ResourceClaimKind = schema.GroupKind{Group: ResourceClaims.Group, Kind: "ResourceClaim"}
)
