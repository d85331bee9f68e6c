package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenantguard/tenantguard/internal/policydir"
	"github.com/tenantguard/tenantguard/tests/live"
)

// TestServeEnforcesARuleFamilyAddedWithoutGo runs `tenantguard serve` with
// a --policy-dir that adds a rule family (tests/fixtures/family) and the
// webhook configurations built from that library, on a real API server:
// the family's kind reaches the server and its rule refuses a tenant's
// ConfigMap holding a password, and the embedded families keep deciding.
// tests.TestARuleFamilyTakesNoGo follows the family through every other
// engine.
func TestServeEnforcesARuleFamilyAddedWithoutGo(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	if err := live.CopyFamilyPolicy(dir); err != nil {
		t.Fatal(err)
	}
	cat, err := policydir.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := servePolicyDir(t, dir, cat)
	alice := c.As("alice")
	configMap := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Data: data}
	}
	// the namespace reaches the server's view a few milliseconds after it is created
	eventually(t, "the family's rule refusing a password", func(ctx context.Context) error {
		_, err := alice.CoreV1().ConfigMaps("oil-dev").Create(ctx, configMap(map[string]string{"DB_PASSWORD": "hunter2"}), dryRun)
		if err == nil || !strings.Contains(err.Error(), "[configmap-secrets] ") {
			return fmt.Errorf("not refused by configmap-secrets yet: %w", err)
		}
		return nil
	})
	_, err = alice.CoreV1().ConfigMaps("oil-dev").Create(ctx, configMap(map[string]string{"DB_PASSWORD": "hunter2"}), dryRun)
	wantDenied(t, err, "configmap-secrets")
	_, err = alice.CoreV1().ConfigMaps("oil-dev").Create(ctx, configMap(map[string]string{"DB_HOST": "db"}), dryRun)
	wantAllowed(t, err)
	_, err = alice.CoreV1().Pods("oil-dev").Create(ctx, pod("web", func(s *corev1.PodSpec) { s.HostNetwork = true }), dryRun)
	wantDenied(t, err, "host-network")
}
