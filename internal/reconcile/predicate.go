package reconcile

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// quotaWritten passes every event of a companion ResourceQuota but the
// updates of its status alone: the quota controller rewrites status.used at
// each create and delete of a pod or claim in the namespace, and a pass
// over the namespace for each would apply every companion again.
var quotaWritten = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	before, ok1 := e.ObjectOld.(*corev1.ResourceQuota)
	after, ok2 := e.ObjectNew.(*corev1.ResourceQuota)
	if !ok1 || !ok2 {
		return true
	}
	return !equality.Semantic.DeepEqual(before.Spec, after.Spec) ||
		!equality.Semantic.DeepEqual(before.Labels, after.Labels) ||
		!equality.Semantic.DeepEqual(before.Annotations, after.Annotations) ||
		!equality.Semantic.DeepEqual(before.OwnerReferences, after.OwnerReferences) ||
		!equality.Semantic.DeepEqual(before.Finalizers, after.Finalizers) ||
		!before.DeletionTimestamp.Equal(after.DeletionTimestamp)
}}
