package e2e

import (
	"context"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tenantguard/tenantguard/tests/live"
	"github.com/tenantguard/tenantguard/webhook/configuration"
)

// TestADeadWebhookLeavesTheClusterWorking installs the same webhook
// configuration pointing at a closed port, as if every tenantguard pod had
// died, and checks what still works: only tenant namespaces are blocked.
func TestADeadWebhookLeavesTheClusterWorking(t *testing.T) {
	ctx := t.Context()
	// Created while tenantguard is up: with it down, no namespace can be
	// created or deleted (ownership is a tenant rule and fails closed).
	plain, err := cluster.Client.CoreV1().Namespaces().Create(ctx, namespace("plain", nil), metav1.CreateOptions{})
	wantAllowed(t, err)
	tenant, err := cluster.Client.CoreV1().Namespaces().Create(ctx, namespace("ghost-down", map[string]string{tenantLabel: "ghost"}), metav1.CreateOptions{})
	wantAllowed(t, err)
	dead := configuration.Validating(configuration.Options{Name: "tenantguard-dead", URL: "https://127.0.0.1:1", Namespace: live.Namespace})
	if _, err := cluster.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, dead, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cluster.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.WithoutCancel(ctx), dead.Name, metav1.DeleteOptions{})
	})

	admin := cluster.Client
	node := cluster.As("system:node:worker-1", "system:nodes")
	tests := []struct {
		name string
		do   func(ctx context.Context, c kubernetes.Interface) error
		as   kubernetes.Interface
	}{
		{"pods in kube-system are created", func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods("kube-system").Create(ctx, pod("dns"), dryRun)
			return err
		}, admin},
		{"node leases are renewed", func(ctx context.Context, c kubernetes.Interface) error {
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}}
			_, err := c.CoordinationV1().Leases("kube-node-lease").Create(ctx, lease, metav1.CreateOptions{})
			return err
		}, admin},
		{"tenantguard's own namespace can be repaired", func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods(live.Namespace).Create(ctx, pod("tenantguard"), dryRun)
			return err
		}, admin},
		{"kube-system's namespace object can be updated", func(ctx context.Context, c kubernetes.Interface) error {
			ns, err := c.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
			if err != nil {
				return err
			}
			ns.Annotations = map[string]string{"example.com/touched": "yes"}
			_, err = c.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
			return err
		}, admin},
		{"pods outside tenant namespaces are created", func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods(plain.Name).Create(ctx, pod("job"), dryRun)
			return err
		}, admin},
		{"nodes act in tenant namespaces", func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods(tenant.Name).Create(ctx, pod("mirror"), dryRun)
			return err
		}, node},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantAllowed(t, tt.do(t.Context(), tt.as))
		})
	}
	t.Run("tenant namespaces are closed while tenantguard is down", func(t *testing.T) {
		_, err := cluster.Client.CoreV1().Pods(tenant.Name).Create(t.Context(), pod("blocked"), dryRun)
		if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
			t.Fatalf("got %v, want the dead webhook's failure", err)
		}
	})
	t.Run("namespaces cannot be created while tenantguard is down", func(t *testing.T) {
		_, err := cluster.Client.CoreV1().Namespaces().Create(t.Context(), namespace("later", nil), dryRun)
		if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
			t.Fatalf("got %v, want the dead webhook's failure", err)
		}
	})
}
