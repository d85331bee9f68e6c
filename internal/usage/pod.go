package usage

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// podOptions read a pod as the quota evaluator does with in-place resize
// (GA): the largest of what its spec asks and what its containers' statuses
// hold allocated and actuated, each summed, so that a resize counts as soon
// as it is asked for and a shrink only once it is done; the statuses alone
// once a resize is found infeasible. As the evaluator (Kubernetes 1.37), they
// aggregate the containers' statuses and leave the pod-level ones out:
// those include the pod's overhead, which PodRequests adds again.
var podOptions = resourcehelper.PodResourcesOptions{UseStatusResources: true}

// Finished reports whether a pod has reached a terminal phase, after which
// ResourceQuota no longer counts its compute resources.
func Finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// ChargedUntil is when ResourceQuota stops counting a pod being deleted: at
// the end of its grace period, so that pods stuck terminating (on a lost
// node) do not keep their tenant from replacing them (the quota
// evaluator's QuotaV1Pod). ok is false for a pod not being deleted.
func ChargedUntil(pod *corev1.Pod) (until time.Time, ok bool) {
	if pod.DeletionTimestamp == nil || pod.DeletionGracePeriodSeconds == nil {
		return time.Time{}, false
	}
	return pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second), true
}

// Charged reports whether ResourceQuota counts a pod at now: not once it
// has finished, nor once its deletion's grace period has passed.
func Charged(pod *corev1.Pod, now time.Time) bool {
	if Finished(pod) {
		return false
	}
	until, deleting := ChargedUntil(pod)
	return !deleting || !now.After(until)
}

// Pod is what a pod counts against a resource quota: nothing once it no
// longer counts (Charged, now); else its compute resources, as requests.*
// and limits.*, its hugepages and the extended resources it requests (as
// requests.NAME only: extended resources are not overcommitted).
// ResourceQuota's other names for requests (cpu, memory, hugepages-2Mi) are
// not repeated: Canonical maps them.
func Pod(pod *corev1.Pod) corev1.ResourceList {
	if !Charged(pod, time.Now()) {
		return corev1.ResourceList{}
	}
	pod = defaulted(pod)
	return compute(resourcehelper.PodRequests(pod, podOptions), resourcehelper.PodLimits(pod, podOptions))
}

// compute maps requests and limits to the quota resource names they count
// under.
func compute(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := requests[name]; ok {
			out[corev1.DefaultResourceRequestsPrefix+name] = q
		}
		if q, ok := limits[name]; ok {
			out[corev1.ResourceName(limitsPrefix)+name] = q
		}
	}
	for name, q := range requests {
		switch {
		case strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
			out[corev1.DefaultResourceRequestsPrefix+name] = q
		case extended(string(name)):
			out[corev1.DefaultResourceRequestsPrefix+name] = q
		}
	}
	return out
}

const limitsPrefix = "limits."

// Claim is what a PersistentVolumeClaim counts against a resource quota:
// its storage request (or the capacity allocated to it, when larger: an
// expansion being undone still holds it), in total and under its
// StorageClass, and itself under its StorageClass.
func Claim(pvc *corev1.PersistentVolumeClaim) corev1.ResourceList {
	out := corev1.ResourceList{}
	storage := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if allocated, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; ok && allocated.Cmp(storage) > 0 {
		storage = allocated
	}
	out[corev1.ResourceRequestsStorage] = storage
	if class := claimClass(pvc); class != "" {
		out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourceRequestsStorage))] = storage
		out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))] = *resource.NewQuantity(1, resource.DecimalSI)
	}
	return out
}

// storageClassSuffix follows a class name in the quota resources counted
// per StorageClass.
const storageClassSuffix = ".storageclass.storage.k8s.io/"

// betaClassAnnotation is the legacy StorageClass of a claim, which the API
// server still reads first.
const betaClassAnnotation = "volume.beta.kubernetes.io/storage-class"

func claimClass(pvc *corev1.PersistentVolumeClaim) string {
	if class, ok := pvc.Annotations[betaClassAnnotation]; ok {
		return class
	}
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}

// defaulted is pod as the API server stores it: a container's request that
// is not given defaults to its limit; then, with pod-level limits, a
// pod-level request not given defaults to the containers' requests of it
// (CPU and memory) or else to the pod-level limit. Validating admission
// sees pods defaulted already; a manifest read offline (review, audit) may
// not be.
func defaulted(pod *corev1.Pod) *corev1.Pod {
	podLevel := pod.Spec.Resources != nil && needsDefaults([]corev1.Container{{Resources: *pod.Spec.Resources}})
	if !needsDefaults(pod.Spec.Containers) && !needsDefaults(pod.Spec.InitContainers) && !podLevel {
		return pod
	}
	out := *pod
	out.Spec.Containers = withDefaults(pod.Spec.Containers)
	out.Spec.InitContainers = withDefaults(pod.Spec.InitContainers)
	if podLevel {
		out.Spec.Resources = podRequestsDefaulted(&out)
	}
	return &out
}

// podRequestsDefaulted is the pod-level resources of pod (whose containers
// are defaulted) with the requests the API server defaults (KEP-2837).
func podRequestsDefaulted(pod *corev1.Pod) *corev1.ResourceRequirements {
	r := pod.Spec.Resources.DeepCopy()
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, q := range resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{}) {
		_, given := r.Requests[name]
		overcommitted := name == corev1.ResourceCPU || name == corev1.ResourceMemory
		if !given && overcommitted {
			r.Requests[name] = q
		}
	}
	for name, q := range r.Limits {
		if _, given := r.Requests[name]; !given && resourcehelper.IsSupportedPodLevelResource(name) {
			r.Requests[name] = q
		}
	}
	return r
}

func needsDefaults(containers []corev1.Container) bool {
	for i := range containers {
		r := &containers[i].Resources
		for name := range r.Limits {
			if _, ok := r.Requests[name]; !ok {
				return true
			}
		}
	}
	return false
}

func withDefaults(containers []corev1.Container) []corev1.Container {
	out := slices.Clone(containers)
	for i := range out {
		r := &out[i].Resources
		requests := r.Requests.DeepCopy()
		for name, q := range r.Limits {
			if _, ok := requests[name]; !ok {
				if requests == nil {
					requests = corev1.ResourceList{}
				}
				requests[name] = q
			}
		}
		r.Requests = requests
	}
	return out
}

// Canonical is the name under which Pod and Claim count a quota resource:
// requests.cpu for ResourceQuota's cpu, requests.memory for memory,
// requests.ephemeral-storage and requests.hugepages-SIZE likewise; any other
// name is its own.
func Canonical(key string) string {
	switch {
	case key == string(corev1.ResourceCPU) || key == string(corev1.ResourceMemory) || key == string(corev1.ResourceEphemeralStorage),
		strings.HasPrefix(key, corev1.ResourceHugePagesPrefix):
		return corev1.DefaultResourceRequestsPrefix + key
	}
	return key
}
