package watch_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/informers"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/internal/watch"
	"github.com/tenantguard/tenantguard/tests/live"
)

const registryDoc = `apiVersion: tenantguard.io/v1
kind: TenantRegistry
tenants:
  - name: oil
    owners: [{kind: User, name: alice}]
    quotas: {pods: 10, configmaps: 10}
`

// TestTheViewCountsWhatTenantQuotasCount runs the watcher on a real API
// server: a registry counting pods and configmaps is loaded, its counted
// resources are watched from then on, a tenant's ConfigMaps are all
// counted although the typed ConfigMap informer sees the registry alone,
// and a pod that finishes is no longer counted, nor one stuck terminating
// past its grace period.
func TestTheViewCountsWhatTenantQuotasCount(t *testing.T) {
	ctx := t.Context()
	cp, err := live.StartControlPlane(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	core := cp.Client.CoreV1()
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "tenantguard-system"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "oil-a", Labels: map[string]string{registry.DefaultTenantLabel: "oil"}}},
	} {
		if _, err := core.Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		if _, err := core.ConfigMaps("oil-a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("settings-", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("web-", i)}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}
		if _, err := core.Pods("oil-a").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tenantguard-registry"}, Data: map[string]string{registry.DataKey: registryDoc}}
	if _, err := core.ConfigMaps("tenantguard-system").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	discard := slog.New(slog.DiscardHandler)
	view := clusterview.New(registry.DefaultTenantLabel)
	store := state.New(view, state.Options{Logger: discard})
	if err := store.LoadPolicy(ctx, "embedded", nil); err != nil {
		t.Fatal(err)
	}
	opts := watch.Options{RegistryNamespace: "tenantguard-system", RegistryName: "tenantguard-registry", Logger: discard}
	mgr, err := informers.NewManager(cp.Admin, informers.Options{Layout: watch.CacheLayout(opts), Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watch.New(ctx, mgr, store, opts)
	if err != nil {
		t.Fatal(err)
	}
	stop := live.Run(ctx, mgr.Start)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("the manager stopped with %v", err)
		}
	}()
	eventually(t, "the view synced", w.Synced)
	counts := func(pods, configMaps int) func() error {
		return func() error {
			if p, c := view.Count("oil", "pods"), view.Count("oil", "configmaps"); p != pods || c != configMaps {
				return fmt.Errorf("oil counts %d pods and %d configmaps, want %d and %d", p, c, pods, configMaps)
			}
			return nil
		}
	}
	eventually(t, "every pod and ConfigMap counted", counts(2, 2))

	pod, err := core.Pods("oil-a").Get(ctx, "web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodSucceeded
	if _, err := core.Pods("oil-a").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the finished pod no longer counted", counts(1, 2))

	// A pod bound to a node that is gone: its deletion waits for a kubelet
	// that never answers, and ResourceQuota stops counting it once its
	// grace period has passed.
	stuck := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stuck"}, Spec: corev1.PodSpec{NodeName: "lost", Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}
	if _, err := core.Pods("oil-a").Create(ctx, stuck, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stuck pod counted", counts(2, 2))
	grace := int64(2)
	if err := core.Pods("oil-a").Delete(ctx, "stuck", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if p, err := core.Pods("oil-a").Get(ctx, "stuck", metav1.GetOptions{}); err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("the stuck pod should wait for its kubelet: %v, %v", p, err)
	}
	eventually(t, "the stuck pod no longer counted once its grace period passed", counts(1, 2))
	if waited := time.Since(deleted); waited < time.Second {
		t.Errorf("the stuck pod left the counts %s after its deletion, within its grace period of %ds", waited, grace)
	}
}

func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
