package engine

import (
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// podOf reads, of a decoded pod, what its usage depends on, straight from
// the request's values: the containers' and init containers' names,
// resources and restart policies, the pod's overhead and resources, its
// phase, what its containers' statuses hold allocated and whether a resize
// was found infeasible. The rest of the pod is not read.
func podOf(obj ast.Object) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	spec := objectAt(obj, "spec")
	var err error
	if p.Spec.Containers, err = containersOf(spec, "containers"); err != nil {
		return nil, err
	}
	if p.Spec.InitContainers, err = containersOf(spec, "initContainers"); err != nil {
		return nil, err
	}
	if p.Spec.Overhead, err = resourceList(spec, "overhead"); err != nil {
		return nil, err
	}
	if r := objectAt(spec, "resources"); r != nil {
		if p.Spec.Resources, err = requirements(r); err != nil {
			return nil, err
		}
	}
	status := objectAt(obj, "status")
	p.Status.Phase = corev1.PodPhase(text(status, "phase"))
	if p.Status.ContainerStatuses, err = statusesOf(status, "containerStatuses"); err != nil {
		return nil, err
	}
	if p.Status.InitContainerStatuses, err = statusesOf(status, "initContainerStatuses"); err != nil {
		return nil, err
	}
	p.Status.Conditions = resizeConditionOf(status)
	return p, nil
}

// resizeConditionOf is, of a pod's status, its PodResizePending condition
// (its reason says whether the resize is infeasible), the one condition
// its usage depends on.
func resizeConditionOf(status ast.Object) []corev1.PodCondition {
	list, _ := valueAt(status, "conditions").(*ast.Array)
	for i := range arrayLen(list) {
		c, _ := list.Elem(i).Value.(ast.Object)
		if text(c, "type") == string(corev1.PodResizePending) {
			return []corev1.PodCondition{{Type: corev1.PodResizePending, Reason: text(c, "reason")}}
		}
	}
	return nil
}

// claimOf reads, of a decoded claim, what its usage depends on.
func claimOf(obj ast.Object) (*corev1.PersistentVolumeClaim, error) {
	c := &corev1.PersistentVolumeClaim{}
	// The annotation, when given, is the class, even empty (no class), as
	// the API server reads it (GetPersistentVolumeClaimClass).
	if t := termAt(objectAt(objectAt(obj, "metadata"), "annotations"), "volume.beta.kubernetes.io/storage-class"); t != nil {
		if class, ok := t.Value.(ast.String); ok {
			c.Annotations = map[string]string{"volume.beta.kubernetes.io/storage-class": string(class)}
		}
	}
	spec := objectAt(obj, "spec")
	if t := termAt(spec, "storageClassName"); t != nil {
		if s, ok := t.Value.(ast.String); ok {
			class := string(s)
			c.Spec.StorageClassName = &class
		}
	}
	var err error
	if c.Spec.Resources.Requests, err = resourceList(objectAt(spec, "resources"), "requests"); err != nil {
		return nil, err
	}
	if c.Status.AllocatedResources, err = resourceList(objectAt(obj, "status"), "allocatedResources"); err != nil {
		return nil, err
	}
	return c, nil
}

// deviceClaimOf reads, of a decoded ResourceClaim, what its usage depends
// on: each device request's class, allocation mode and count, and those of
// its alternatives, in resource.k8s.io/v1's shape and in v1beta1's (whose
// exact request is the request itself, which the webhook receives as sent,
// being routed every version).
func deviceClaimOf(obj ast.Object) (*resourcev1.ResourceClaim, error) {
	c := &resourcev1.ResourceClaim{}
	list, _ := valueAt(objectAt(objectAt(obj, "spec"), "devices"), "requests").(*ast.Array)
	if list == nil {
		return c, nil
	}
	c.Spec.Devices.Requests = make([]resourcev1.DeviceRequest, 0, list.Len())
	for i := range list.Len() {
		r, _ := list.Elem(i).Value.(ast.Object)
		var req resourcev1.DeviceRequest
		exactly := objectAt(r, "exactly")
		if exactly == nil && text(r, "deviceClassName") != "" {
			exactly = r // resource.k8s.io/v1beta1's shape: the request is the exact one
		}
		if exactly != nil {
			class, mode, count, err := deviceRequestOf(exactly)
			if err != nil {
				return nil, fmt.Errorf("request %d: %w", i, err)
			}
			req.Exactly = &resourcev1.ExactDeviceRequest{DeviceClassName: class, AllocationMode: mode, Count: count}
		}
		subs, _ := valueAt(r, "firstAvailable").(*ast.Array)
		for j := range arrayLen(subs) {
			sub, _ := subs.Elem(j).Value.(ast.Object)
			class, mode, count, err := deviceRequestOf(sub)
			if err != nil {
				return nil, fmt.Errorf("request %d, alternative %d: %w", i, j, err)
			}
			req.FirstAvailable = append(req.FirstAvailable, resourcev1.DeviceSubRequest{DeviceClassName: class, AllocationMode: mode, Count: count})
		}
		c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, req)
	}
	return c, nil
}

// arrayLen is the length of a, 0 when a is nil.
func arrayLen(a *ast.Array) int {
	if a == nil {
		return 0
	}
	return a.Len()
}

// deviceRequestOf reads a device request's class, mode and count.
func deviceRequestOf(r ast.Object) (class string, mode resourcev1.DeviceAllocationMode, count int64, err error) {
	if t := termAt(r, "count"); t != nil {
		n, ok := t.Value.(ast.Number)
		if !ok {
			return "", "", 0, fmt.Errorf("count %s is not a number", t)
		}
		if count, ok = n.Int64(); !ok {
			return "", "", 0, fmt.Errorf("count %s is not a whole number", n)
		}
	}
	return text(r, "deviceClassName"), resourcev1.DeviceAllocationMode(text(r, "allocationMode")), count, nil
}

func containersOf(spec ast.Object, key string) ([]corev1.Container, error) {
	list, _ := valueAt(spec, key).(*ast.Array)
	if list == nil {
		return nil, nil
	}
	out := make([]corev1.Container, 0, list.Len())
	for i := range list.Len() {
		c, _ := list.Elem(i).Value.(ast.Object)
		container := corev1.Container{Name: text(c, "name")}
		if policy := text(c, "restartPolicy"); policy != "" {
			p := corev1.ContainerRestartPolicy(policy)
			container.RestartPolicy = &p
		}
		if r := objectAt(c, "resources"); r != nil {
			req, err := requirements(r)
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", key, i, err)
			}
			container.Resources = *req
		}
		out = append(out, container)
	}
	return out, nil
}

func statusesOf(status ast.Object, key string) ([]corev1.ContainerStatus, error) {
	list, _ := valueAt(status, key).(*ast.Array)
	if list == nil {
		return nil, nil
	}
	out := make([]corev1.ContainerStatus, 0, list.Len())
	for i := range list.Len() {
		s, _ := list.Elem(i).Value.(ast.Object)
		cs := corev1.ContainerStatus{Name: text(s, "name")}
		var err error
		if cs.AllocatedResources, err = resourceList(s, "allocatedResources"); err != nil {
			return nil, err
		}
		if r := objectAt(s, "resources"); r != nil {
			if cs.Resources, err = requirements(r); err != nil {
				return nil, err
			}
		}
		out = append(out, cs)
	}
	return out, nil
}

func requirements(r ast.Object) (*corev1.ResourceRequirements, error) {
	requests, err := resourceList(r, "requests")
	if err != nil {
		return nil, err
	}
	limits, err := resourceList(r, "limits")
	if err != nil {
		return nil, err
	}
	return &corev1.ResourceRequirements{Requests: requests, Limits: limits}, nil
}

// resourceList reads a resource list; quantities may be strings or
// numbers, as the API server accepts them.
func resourceList(obj ast.Object, key string) (corev1.ResourceList, error) {
	m, _ := valueAt(obj, key).(ast.Object)
	if m == nil || m.Len() == 0 {
		return nil, nil
	}
	out := make(corev1.ResourceList, m.Len())
	var err error
	m.Foreach(func(k, v *ast.Term) {
		name, _ := k.Value.(ast.String)
		var text string
		switch q := v.Value.(type) {
		case ast.String:
			text = string(q)
		case ast.Number:
			text = string(q)
		default:
			err = fmt.Errorf("%s: %s is not a quantity", name, v)
			return
		}
		parsed, perr := resource.ParseQuantity(text)
		if perr != nil {
			err = fmt.Errorf("%s: %w", name, perr)
			return
		}
		out[corev1.ResourceName(name)] = parsed
	})
	return out, err
}

// text is the string at key of obj, or "".
func text(obj ast.Object, key string) string {
	s, _ := stringAt(obj, key)
	return s
}
