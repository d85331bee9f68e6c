package reconcile

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestOnlyAQuotaWrittenByItsOwnersIsReconciled(t *testing.T) {
	quota := func(change func(q *corev1.ResourceQuota)) *corev1.ResourceQuota {
		q := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "tenantguard", Namespace: "oil-dev", ResourceVersion: "1", Labels: map[string]string{"app.kubernetes.io/managed-by": "tenantguard"}},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}},
			Status:     corev1.ResourceQuotaStatus{Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}},
		}
		change(q)
		return q
	}
	old := quota(func(*corev1.ResourceQuota) {})
	for _, tc := range []struct {
		name   string
		change func(q *corev1.ResourceQuota)
		want   bool
	}{
		{"a pod created in the namespace changes status.used only", func(q *corev1.ResourceQuota) {
			q.ResourceVersion = "2"
			q.Status.Used[corev1.ResourcePods] = resource.MustParse("2")
		}, false},
		{"someone edits the limit", func(q *corev1.ResourceQuota) { q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("100") }, true},
		{"someone removes the managed-by label", func(q *corev1.ResourceQuota) { q.Labels = nil }, true},
		{"someone annotates it", func(q *corev1.ResourceQuota) { q.Annotations = map[string]string{"a": "b"} }, true},
		{"it is being deleted", func(q *corev1.ResourceQuota) { now := metav1.Now(); q.DeletionTimestamp = &now }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := quotaWritten.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: quota(tc.change)}); got != tc.want {
				t.Errorf("reconciled: %t, want %t", got, tc.want)
			}
		})
	}
	if !quotaWritten.Delete(event.DeleteEvent{Object: old}) || !quotaWritten.Create(event.CreateEvent{Object: old}) {
		t.Error("creates and deletes of a quota are not reconciled")
	}
}
