package watch

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/usage"
)

// usageObject is a pod or claim as the cache keeps it: its identity and
// what it adds to its tenant's sums of quota resources (package usage),
// computed from the whole object as it arrives (usageTransform), which is
// then dropped. It is a runtime.Object so that the informer can keep it;
// nothing reads it through the cache's client.
type usageObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Usage usage.List
}

// DeepCopyObject implements runtime.Object. The usage list is shared:
// nothing changes it.
func (u *usageObject) DeepCopyObject() runtime.Object {
	out := *u
	u.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// usageKinds are the kinds whose objects add to sums of quota resources,
// by resource: each is watched typed, through usageTransform, instead of
// as metadata.
var usageKinds = map[schema.GroupResource]client.Object{
	{Resource: "pods"}:                   &corev1.Pod{},
	{Resource: "persistentvolumeclaims"}: &corev1.PersistentVolumeClaim{},
}

// usageTransform turns a pod or claim into its usageObject before the
// informer stores it.
func usageTransform(obj any) (any, error) {
	var meta metav1.ObjectMeta
	var l usage.List
	switch o := obj.(type) {
	case *corev1.Pod:
		meta, l = o.ObjectMeta, clusterview.PodUsage(o)
	case *corev1.PersistentVolumeClaim:
		meta, l = o.ObjectMeta, clusterview.ClaimUsage(o)
	default:
		return obj, nil
	}
	return &usageObject{ObjectMeta: metav1.ObjectMeta{
		Name: meta.Name, Namespace: meta.Namespace, UID: meta.UID, ResourceVersion: meta.ResourceVersion,
	}, Usage: l}, nil
}

// usageCounted turns a usageObject into a view object of resource gr.
func usageCounted(gr schema.GroupResource) func(*usageObject) clusterview.Object {
	return func(u *usageObject) clusterview.Object {
		return clusterview.Object{Group: gr.Group, Resource: gr.Resource, Namespace: u.Namespace, Name: u.Name, Usage: u.Usage}
	}
}
