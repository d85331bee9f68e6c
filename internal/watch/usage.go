package watch

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/usage"
)

// usageObject is a pod or claim (PersistentVolumeClaim, ResourceClaim) as
// the cache keeps it: its identity and what it adds to its tenant's sums of quota resources (package usage),
// computed from the whole object as it arrives (usageTransform), which is
// then dropped. It is a runtime.Object so that the informer can keep it;
// nothing reads it through the cache's client.
type usageObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Usage usage.List
	// ChargedUntil, for a pod being deleted, is when ResourceQuota stops
	// counting it (usage.ChargedUntil); zero for any other object.
	ChargedUntil time.Time
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
	usage.ResourceClaims:                 &resourcev1.ResourceClaim{},
}

// usageTransform turns a pod or claim into its usageObject before the
// informer stores it.
func usageTransform(obj any) (any, error) {
	var meta metav1.ObjectMeta
	var l usage.List
	var until time.Time
	switch o := obj.(type) {
	case *corev1.Pod:
		meta, l = o.ObjectMeta, clusterview.PodUsage(o)
		until, _ = usage.ChargedUntil(o)
	case *corev1.PersistentVolumeClaim:
		meta, l = o.ObjectMeta, clusterview.ClaimUsage(o)
	case *resourcev1.ResourceClaim:
		meta, l = o.ObjectMeta, clusterview.DeviceClaimUsage(o)
	default:
		return obj, nil
	}
	return &usageObject{ObjectMeta: metav1.ObjectMeta{
		Name: meta.Name, Namespace: meta.Namespace, UID: meta.UID, ResourceVersion: meta.ResourceVersion,
	}, Usage: l, ChargedUntil: until}, nil
}

// usageHandler is the view's handler of the pods or claims informer: as
// viewHandler's, and a pod whose deletion's grace period has passed leaves
// the view, counts and sums, as ResourceQuota stops counting it then. No
// event comes when it passes (a pod stuck terminating on a lost node does
// not change), so each pod being deleted is looked at again then.
func usageHandler(view *clusterview.View, gr schema.GroupResource, informer crcache.Informer) toolscache.ResourceEventHandler {
	convert := usageCounted(gr)
	stored, _ := informer.(interface{ GetStore() toolscache.Store })
	// uncharge takes u out of the view once its grace period has passed,
	// unless its informer holds no pod of its name any more (its deletion
	// took it out) or another one, created since under the same name.
	uncharge := func(u *usageObject) {
		if stored == nil {
			return
		}
		obj, exists, err := stored.GetStore().GetByKey(u.Namespace + "/" + u.Name)
		if cur, ok := obj.(*usageObject); err != nil || !exists || !ok || cur.UID != u.UID {
			return
		}
		view.Delete(convert(u))
	}
	seen := func(obj any) {
		u, ok := obj.(*usageObject)
		if !ok {
			return
		}
		if u.ChargedUntil.IsZero() {
			view.Upsert(convert(u))
			return
		}
		left := time.Until(u.ChargedUntil)
		if left < 0 {
			view.Delete(convert(u))
			return
		}
		view.Upsert(convert(u))
		time.AfterFunc(left+time.Millisecond, func() { uncharge(u) })
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
		DeleteFunc: viewHandler(view, convert).OnDelete,
	}
}

// usageCounted turns a usageObject into a view object of resource gr.
func usageCounted(gr schema.GroupResource) func(*usageObject) clusterview.Object {
	return func(u *usageObject) clusterview.Object {
		return clusterview.Object{Group: gr.Group, Resource: gr.Resource, Namespace: u.Namespace, Name: u.Name, UID: string(u.UID), Usage: u.Usage}
	}
}
