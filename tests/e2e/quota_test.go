package e2e

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/tests/live"
)

// burst is how many pods a burst creates at once, against room for room.
const burst, room = 50, 10

// TestABurstOfCreatesAgainstATenantQuota sends 50 parallel pod creates
// through a real API server against a tenant quota with room for 10, with
// the webhook served by one replica, by two replicas in the default (local)
// mode, and by two replicas in strict mode, behind a round-robin balancer as
// a Service spreads calls over pods. One replica and strict mode must admit
// exactly 10; two local replicas may overshoot, by at most one room per
// extra replica, and the figure is logged. It runs on a control plane of its
// own, so that it can repoint the webhooks.
func TestABurstOfCreatesAgainstATenantQuota(t *testing.T) {
	ctx := t.Context()
	c, err := live.Start(ctx, live.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	scenarios := []struct {
		tenant   string
		replicas int
		args     []string
		// most is the largest number of admitted creates allowed.
		most int
	}{
		{"burst-one", 1, nil, room},
		{"burst-local", 2, nil, 2 * room},
		{"burst-strict", 2, []string{"--quota-mode=strict"}, room},
	}
	var tenants strings.Builder
	for _, s := range scenarios {
		fmt.Fprintf(&tenants, "  - name: %s\n    owners: [{kind: User, name: burster}]\n    quotas: {pods: %d}\n", s.tenant, room)
	}
	tenants.WriteString(goneTenant)
	addTenants(t, c, tenants.String())
	grantLedgers(t, c)
	admin := fastClient(t, c.Admin)
	for _, s := range scenarios {
		ns := s.tenant + "-ns"
		eventually(t, "namespace "+ns, func(ctx context.Context) error {
			_, err := admin.CoreV1().Namespaces().Create(ctx, namespace(ns, map[string]string{tenantLabel: s.tenant}), metav1.CreateOptions{})
			return err
		})
	}
	for _, s := range scenarios {
		t.Run(fmt.Sprintf("%s: %d replicas %v", s.tenant, s.replicas, s.args), func(t *testing.T) {
			behindBalancer(t, c, s.replicas, s.args...)

			start := time.Now()
			admitted, refused := createBurst(t, admin, s.tenant+"-ns")
			elapsed := time.Since(start)
			t.Logf("%s: %d of %d creates admitted (room %d), %d refused by tenant-quota, burst took %v", s.tenant, admitted, burst, room, refused, elapsed.Round(time.Millisecond))
			if admitted < room || admitted > s.most {
				t.Fatalf("%d creates admitted, want %d to %d", admitted, room, s.most)
			}
			if admitted+refused != burst {
				t.Fatalf("%d admitted + %d refused by tenant-quota, want %d", admitted, refused, burst)
			}
			pods, err := admin.CoreV1().Pods(s.tenant+"-ns").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != admitted {
				t.Fatalf("%d pods stored, %d admitted", len(pods.Items), admitted)
			}
			if s.args != nil {
				cm, err := admin.CoreV1().ConfigMaps(live.Namespace).Get(ctx, quota.NamePrefix+s.tenant, metav1.GetOptions{})
				if err != nil {
					t.Fatalf("the strict ledger: %v", err)
				}
				if n := strings.Count(cm.Data["claims"], `"key"`); n != admitted {
					t.Fatalf("the ledger holds %d claims, want the %d admitted", n, admitted)
				}
			}
		})
	}
	t.Run("the ledger of a tenant removed from the registry is deleted once its entries expire", func(t *testing.T) {
		behindBalancer(t, c, 1, "--quota-mode=strict")
		ns := "burst-gone-ns"
		eventually(t, "namespace "+ns, func(ctx context.Context) error {
			_, err := admin.CoreV1().Namespaces().Create(ctx, namespace(ns, map[string]string{tenantLabel: "burst-gone"}), metav1.CreateOptions{})
			return err
		})
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod("p"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ledger := quota.NamePrefix + "burst-gone"
		cm, err := admin.CoreV1().ConfigMaps(live.Namespace).Get(ctx, ledger, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the pod's create wrote no ledger: %v", err)
		}
		// The entry as if written a TTL ago (30 s at least), not to wait.
		expired := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		cm.Data["claims"] = regexp.MustCompile(`"expires":"[^"]*"`).ReplaceAllString(cm.Data["claims"], `"expires":"`+expired+`"`)
		if _, err := admin.CoreV1().ConfigMaps(live.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		setRegistryDoc(t, c, strings.Replace(registryDoc(t, c), goneTenant, "", 1))
		eventually(t, "the removed tenant's ledger deleted", func(ctx context.Context) error {
			_, err := admin.CoreV1().ConfigMaps(live.Namespace).Get(ctx, ledger, metav1.GetOptions{})
			if err == nil {
				return errors.New("still there")
			}
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
		if _, err := admin.CoreV1().ConfigMaps(live.Namespace).Get(ctx, quota.NamePrefix+"burst-strict", metav1.GetOptions{}); err != nil {
			t.Errorf("the ledger of burst-strict, a tenant still in the registry: %v", err)
		}
	})
}

// goneTenant is a tenant the burst test removes from the registry once it
// has a strict ledger.
const goneTenant = "  - name: burst-gone\n    owners: [{kind: User, name: burster}]\n    quotas: {pods: 5}\n"

// createBurst creates burst pods in namespace at once and counts the
// admitted ones and those refused by tenant-quota; any other error fails.
func createBurst(t *testing.T, client kubernetes.Interface, namespace string) (admitted, refused int) {
	t.Helper()
	admitted, refused, _ = parallelCreates(t, burst, "tenant-quota", func(ctx context.Context, i int) error {
		_, err := client.CoreV1().Pods(namespace).Create(ctx, pod(fmt.Sprintf("p%02d", i)), metav1.CreateOptions{})
		return err
	})
	return admitted, refused
}

// addTenants appends tenants (YAML list items) to the cluster's registry;
// the replicas started afterwards load it.
func addTenants(t *testing.T, c *live.Cluster, items string) {
	t.Helper()
	setRegistryDoc(t, c, strings.TrimRight(registryDoc(t, c), "\n")+"\n"+items)
}

// grantLedgers gives tenantguard's user what the chart grants in strict
// mode: create, update and delete on ConfigMaps in its namespace.
func grantLedgers(t *testing.T, c *live.Cluster) {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "tenantguard-quota-ledgers", Namespace: live.Namespace},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "update", "delete"}}},
	}
	if _, err := c.Client.RbacV1().Roles(live.Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: live.Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: engine.DefaultManager}},
	}
	if _, err := c.Client.RbacV1().RoleBindings(live.Namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// fastClient is an administrator client without client-side throttling, so
// that a burst reaches the API server at once.
func fastClient(t *testing.T, admin *rest.Config) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(admin)
	cfg.QPS, cfg.Burst = 1000, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
