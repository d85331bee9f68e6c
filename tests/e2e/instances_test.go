package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenantguard/tenantguard/generator"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/live"
)

// sky is a tenant both instances of TestTwoInstancesShareOneCluster keep.
const sky = `
  - name: sky
    owners: [{kind: User, name: skye}]
    companions:
      resourceQuota: {hard: {pods: "10"}}
`

// blueRegistry is the registry of the second instance: tenant sky only.
const blueRegistry = `apiVersion: tenantguard.io/v1
kind: TenantRegistry
settings:
  forceTenantPrefix: true
tenants:` + sky

// TestTwoInstancesShareOneCluster runs a second server, instance blue with
// a registry of its own, on the API server beside the default instance;
// both keep tenant sky, so both write companions in its namespace. Each
// instance keeps its own companions and its own owners' ClusterRoleBinding
// and prunes none of the other's; when blue's registry drops sky, blue
// prunes its companions and the default instance's stay.
func TestTwoInstancesShareOneCluster(t *testing.T) {
	ctx := t.Context()
	blue, err := generator.NewInstance("blue")
	if err != nil {
		t.Fatal(err)
	}
	original := currentRegistry(t)
	t.Cleanup(func() { setRegistry(t, original) })
	setRegistry(t, original+sky)
	grantInstance(t, blue)
	registryCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "blue-registry", Namespace: live.Namespace}, Data: map[string]string{registry.DataKey: blueRegistry}}
	if _, err := cluster.Client.CoreV1().ConfigMaps(live.Namespace).Create(ctx, registryCM, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cluster.Client.CoreV1().ConfigMaps(live.Namespace).Delete(context.WithoutCancel(ctx), registryCM.Name, metav1.DeleteOptions{})
	})
	_, logs, stop, err := cluster.Replica(ctx, "--instance", blue.Name(), "--registry-configmap", live.Namespace+"/"+registryCM.Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("blue's logs:\n" + logs.String())
		}
	})
	if _, err := cluster.Client.CoreV1().Namespaces().Create(ctx, namespace("sky-a", map[string]string{tenantLabel: "sky"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cluster.Client.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), "sky-a", metav1.DeleteOptions{})
	})
	mine := map[generator.Instance][]string{}
	for _, i := range []generator.Instance{generator.Default, blue} {
		mine[i] = []string{"ResourceQuota/" + i.ResourceQuotaName(), "NetworkPolicy/" + i.NetworkPolicyName(), "RoleBinding/" + i.OwnerBinding("admin"), "RoleBinding/" + i.NamespaceDeleterRole()}
	}
	keeps := func(ctx context.Context, i generator.Instance) error {
		found, err := companionsMatching(ctx, "sky-a", i.Selector().String())
		if err != nil {
			return err
		}
		if got := slices.Sorted(maps.Keys(found)); !slices.Equal(got, slices.Sorted(slices.Values(mine[i]))) {
			return fmt.Errorf("instance %s has %v in sky-a, want %v", i.Name(), got, mine[i])
		}
		crb, err := cluster.Client.RbacV1().ClusterRoleBindings().Get(ctx, i.OwnersBinding(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(crb.Subjects, func(s rbacv1.Subject) bool { return s.Name == "skye" }) {
			return fmt.Errorf("%s does not bind skye", i.OwnersBinding())
		}
		return nil
	}

	t.Run("both instances keep their companions in the namespace they share", func(t *testing.T) {
		for _, i := range []generator.Instance{generator.Default, blue} {
			eventually(t, "instance "+i.Name()+"'s companions", func(ctx context.Context) error { return keeps(ctx, i) })
		}
	})

	t.Run("neither prunes the other's, however often it reconciles", func(t *testing.T) {
		uids, err := companions(ctx, "sky-a")
		if err != nil {
			t.Fatal(err)
		}
		// Each change of the namespace makes both reconcile it again.
		for n := range 3 {
			patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"e2e/touch":"%d"}}}`, n)
			if _, err := cluster.Client.CoreV1().Namespaces().Patch(ctx, "sky-a", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		again, err := companions(ctx, "sky-a")
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(uids, again) {
			t.Fatalf("the companions of sky-a changed (one instance deleted another's):\nbefore %v\nafter  %v", uids, again)
		}
		for name, l := range map[string]string{"default": cluster.Logs.String(), "blue": logs.String()} {
			for line := range strings.Lines(l) {
				if strings.Contains(line, `"pruned companion"`) && (strings.Contains(line, `"sky-a"`) || strings.Contains(line, `-owners"`)) {
					t.Errorf("instance %s pruned: %s", name, line)
				}
			}
		}
	})

	t.Run("blue prunes its own companions only when its registry drops the tenant", func(t *testing.T) {
		registryCM.Data[registry.DataKey] = strings.TrimSuffix(blueRegistry, sky) + " []\n"
		if _, err := cluster.Client.CoreV1().ConfigMaps(live.Namespace).Update(ctx, registryCM, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "blue's companions pruned", func(ctx context.Context) error {
			found, err := companionsMatching(ctx, "sky-a", blue.Selector().String())
			if err != nil {
				return err
			}
			if len(found) > 0 {
				return fmt.Errorf("blue still has %v", slices.Sorted(maps.Keys(found)))
			}
			return nil
		})
		if err := keeps(ctx, generator.Default); err != nil {
			t.Fatal(err)
		}
	})
}

// grantInstance gives tenantguard's user what the chart gives a release of
// instance i beside deploy/rbac's: its owners' ClusterRoleBinding by name,
// bind on its two ClusterRoles, and those ClusterRoles as the generator
// prints them.
func grantInstance(t *testing.T, i generator.Instance) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	snap, err := registry.Load(filepath.Join(live.Root(), "examples", "registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, obj := range i.Cluster(snap) {
		role, ok := obj.(*rbacv1.ClusterRole)
		if !ok {
			continue
		}
		names = append(names, role.Name)
		if _, err := cluster.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	grant := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: i.Name() + "-e2e-grant"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterrolebindings"}, Verbs: []string{"create", "patch", "delete"}, ResourceNames: []string{i.OwnersBinding()}},
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: names},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: grant.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: grant.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: engine.DefaultManager}},
	}
	if _, err := cluster.Client.RbacV1().ClusterRoles().Create(ctx, grant, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, name := range []string{grant.Name, i.OwnersBinding()} {
			_ = cluster.Client.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		}
		for _, name := range append(names, grant.Name) {
			_ = cluster.Client.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
		}
	})
}
