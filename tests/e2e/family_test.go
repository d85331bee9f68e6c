package e2e

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenantguard/tenantguard/internal/policydir"
	"github.com/tenantguard/tenantguard/tests/live"
)

// TestServeEnforcesARuleFamilyAddedWithoutGo runs `tenantguard serve` with
// a --policy-dir that adds a rule family (tests/fixtures/family), and with
// the family alone as a --policy-overlay, and the
// webhook configurations built from that library, on a real API server:
// the family's kind reaches the server and its rule refuses a tenant's
// ConfigMap holding a password, and the embedded families keep deciding.
// tests.TestARuleFamilyTakesNoGo follows the family through every other
// engine.
func TestServeEnforcesARuleFamilyAddedWithoutGo(t *testing.T) {
	library := t.TempDir()
	if err := live.CopyFamilyPolicy(library); err != nil {
		t.Fatal(err)
	}
	overlay := t.TempDir()
	if err := live.CopyDir(filepath.Join(live.Root(), "tests", "fixtures", "family", "configmaps"), overlay); err != nil {
		t.Fatal(err)
	}
	for _, src := range []struct {
		name, flag string
		source     policydir.Source
	}{
		{"in a copy of the library (--policy-dir)", "--policy-dir", policydir.Source{Dir: library}},
		{"in an overlay of the embedded library (--policy-overlay)", "--policy-overlay", policydir.Source{Overlay: overlay}},
	} {
		t.Run(src.name, func(t *testing.T) {
			cat, err := src.source.Load()
			if err != nil {
				t.Fatal(err)
			}
			servedFamily(t, servePolicy(t, cat, src.flag, cmp.Or(src.source.Dir, src.source.Overlay)))
		})
	}
}

// servedFamily checks the family's rule and an embedded one on c.
func servedFamily(t *testing.T, c *live.Cluster) {
	ctx := t.Context()
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
	_, err := alice.CoreV1().ConfigMaps("oil-dev").Create(ctx, configMap(map[string]string{"DB_PASSWORD": "hunter2"}), dryRun)
	wantDenied(t, err, "configmap-secrets")
	_, err = alice.CoreV1().ConfigMaps("oil-dev").Create(ctx, configMap(map[string]string{"DB_HOST": "db"}), dryRun)
	wantAllowed(t, err)
	_, err = alice.CoreV1().Pods("oil-dev").Create(ctx, pod("web", func(s *corev1.PodSpec) { s.HostNetwork = true }), dryRun)
	wantDenied(t, err, "host-network")
}
