package watch

import (
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/tenantguard/tenantguard/internal/clusterview"
)

// slim keeps only what is read of an object's metadata (and the resource
// version informers need): the cache holds little. Namespaces keep their
// labels, which assign them to tenants, and their deletion timestamp, by
// which the companion reconciler leaves a namespace being deleted alone.
func slim(namespace bool) cache.TransformFunc {
	return func(obj any) (any, error) {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return obj, nil
		}
		out := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		}}
		if namespace {
			out.Labels, out.DeletionTimestamp = m.Labels, m.DeletionTimestamp
		}
		return out, nil
	}
}

// addHandler adds one of the watcher's handlers to an informer, without
// the cache's periodic resync (10 h): a resync only offers every object
// again, which would be 100,000 view updates for as many pods, or the
// registry (refused again, with a new Event, if it was refused). The
// reconciler's handler on the shared namespace informer keeps it.
func addHandler(informer crcache.Informer, handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return informer.AddEventHandlerWithResyncPeriod(handler, 0)
}

// viewHandler feeds the view from an informer of T, converting each object;
// deletions seen only after a relist arrive as tombstones and are unwrapped.
func viewHandler[T any](view *clusterview.View, convert func(T) clusterview.Object) cache.ResourceEventHandler {
	toView := func(obj any) (clusterview.Object, bool) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		typed, ok := obj.(T)
		if !ok {
			return clusterview.Object{}, false
		}
		return convert(typed), true
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := toView(obj); ok {
				view.Upsert(o)
			}
		},
		UpdateFunc: func(_, obj any) {
			if o, ok := toView(obj); ok {
				view.Upsert(o)
			}
		},
		DeleteFunc: func(obj any) {
			if o, ok := toView(obj); ok {
				view.Delete(o)
			}
		},
	}
}

// namespaceObject is a namespace as the view keeps it: name and labels.
func namespaceObject(m *metav1.PartialObjectMetadata) clusterview.Object {
	return clusterview.Object{Kind: "Namespace", Name: m.Name, Labels: m.Labels, UID: string(m.UID)}
}

// priorityClassObject is a PriorityClass as the view keeps it.
func priorityClassObject(pc *schedulingv1.PriorityClass) clusterview.Object {
	policy := ""
	if pc.PreemptionPolicy != nil {
		policy = string(*pc.PreemptionPolicy)
	}
	return clusterview.Object{
		Group: schedulingv1.GroupName, Kind: "PriorityClass", Name: pc.Name,
		PriorityClass: &clusterview.PriorityClass{Value: pc.Value, PreemptionPolicy: policy},
	}
}
