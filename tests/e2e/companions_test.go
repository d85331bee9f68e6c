package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenantguard/tenantguard/generator"
)

// water is a tenant the companion tests add to the registry.
const water = `
  - name: water
    owners: [{kind: User, name: wendy}]
    namespaceQuota: 5
    companions:
      resourceQuota: {hard: {pods: "10"}}
      limitRange: {limits: [{type: Container, default: {cpu: 200m}}]}
      additionalRoleBindings: [{clusterRole: view, subjects: [{kind: Group, name: water-auditors}]}]
`

// companionNames are the companions water's namespaces get.
var companionNames = []string{
	"ResourceQuota/" + generator.ResourceQuotaName, "LimitRange/" + generator.LimitRangeName,
	"NetworkPolicy/" + generator.NetworkPolicyName, "RoleBinding/tenantguard-owner-admin",
	"RoleBinding/" + generator.NamespaceDeleterRole, "RoleBinding/tenantguard-view-0",
}

// companionsMatching lists the companions matching a label selector.
func companionsMatching(ctx context.Context, namespace, selector string) (map[string]string, error) {
	return cluster.Companions(ctx, namespace, selector)
}

// companions lists the companions in a namespace.
func companions(ctx context.Context, namespace string) (map[string]string, error) {
	return companionsMatching(ctx, namespace, generator.ManagedByLabel+"="+generator.ManagedByValue)
}

func hasAll(found map[string]string) error {
	var missing []string
	for _, name := range companionNames {
		if _, ok := found[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	return nil
}

// TestCompanions adds tenant water to the registry and follows one of its
// namespaces; wendy has no RBAC but what tenantguard generates.
func TestCompanions(t *testing.T) {
	ctx := t.Context()
	original := currentRegistry(t)
	t.Cleanup(func() { setRegistry(t, original) })
	setRegistry(t, original+water)
	wendy := cluster.AsOnly("wendy")

	t.Run("an owner with only the generated RBAC creates a namespace", func(t *testing.T) {
		eventually(t, "wendy may create namespaces", func(ctx context.Context) error {
			_, err := wendy.CoreV1().Namespaces().Create(ctx, namespace("water-a", nil), metav1.CreateOptions{})
			return err
		})
	})

	t.Run("a new tenant namespace gets all its companions within seconds", func(t *testing.T) {
		start := time.Now()
		eventually(t, "every companion", func(ctx context.Context) error {
			found, err := companions(ctx, "water-a")
			if err != nil {
				return err
			}
			return hasAll(found)
		})
		t.Logf("all %d companions present %s after the namespace was created", len(companionNames), time.Since(start).Round(time.Millisecond))
	})

	t.Run("the owner cannot delete the NetworkPolicy", func(t *testing.T) {
		err := wendy.NetworkingV1().NetworkPolicies("water-a").Delete(ctx, generator.NetworkPolicyName, metav1.DeleteOptions{})
		wantDenied(t, err, "managed-resource")
	})

	t.Run("the NetworkPolicy deleted by an administrator comes back", func(t *testing.T) {
		before, err := companions(ctx, "water-a")
		if err != nil {
			t.Fatal(err)
		}
		wantAllowed(t, cluster.Client.NetworkingV1().NetworkPolicies("water-a").Delete(ctx, generator.NetworkPolicyName, metav1.DeleteOptions{}))
		eventually(t, "the NetworkPolicy recreated", func(ctx context.Context) error {
			found, err := companions(ctx, "water-a")
			if err != nil {
				return err
			}
			key := "NetworkPolicy/" + generator.NetworkPolicyName
			if uid, ok := found[key]; !ok || uid == before[key] {
				return errors.New("not recreated yet")
			}
			return nil
		})
	})

	t.Run("a ResourceQuota changed by an administrator is restored, fields of others are kept", func(t *testing.T) {
		np, err := cluster.Client.NetworkingV1().NetworkPolicies("water-a").Get(ctx, generator.NetworkPolicyName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		np.Annotations = map[string]string{"example.com/reviewed-by": "security"}
		if _, err := cluster.Client.NetworkingV1().NetworkPolicies("water-a").Update(ctx, np, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		rq, err := cluster.Client.CoreV1().ResourceQuotas("water-a").Get(ctx, generator.ResourceQuotaName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rq.Spec.Hard[corev1.ResourcePods] = resource.MustParse("999")
		if _, err := cluster.Client.CoreV1().ResourceQuotas("water-a").Update(ctx, rq, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the quota restored", func(ctx context.Context) error {
			rq, err := cluster.Client.CoreV1().ResourceQuotas("water-a").Get(ctx, generator.ResourceQuotaName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := rq.Spec.Hard[corev1.ResourcePods]; got.String() != "10" {
				return fmt.Errorf("pods %s", got.String())
			}
			return nil
		})
		np, err = cluster.Client.NetworkingV1().NetworkPolicies("water-a").Get(ctx, generator.NetworkPolicyName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if np.Annotations["example.com/reviewed-by"] != "security" {
			t.Fatalf("another manager's annotation was removed: %v", np.Annotations)
		}
	})

	t.Run("removing the tenant's limitRange from the registry prunes the LimitRange, and only it", func(t *testing.T) {
		// A labelled LimitRange tenantguard did not apply must survive pruning.
		foreign := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "hand-made", Labels: map[string]string{generator.ManagedByLabel: generator.ManagedByValue}},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}}}
		if _, err := cluster.Client.CoreV1().LimitRanges("water-a").Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		setRegistry(t, original+strings.Replace(water, "      limitRange: {limits: [{type: Container, default: {cpu: 200m}}]}\n", "", 1))
		eventually(t, "the LimitRange pruned", func(ctx context.Context) error {
			_, err := cluster.Client.CoreV1().LimitRanges("water-a").Get(ctx, generator.LimitRangeName, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there (%w)", err)
			}
			return nil
		})
		if _, err := cluster.Client.CoreV1().LimitRanges("water-a").Get(ctx, "hand-made", metav1.GetOptions{}); err != nil {
			t.Fatalf("the hand-made LimitRange was pruned: %v", err)
		}
	})

	t.Run("the owner deletes the namespace with only the generated RBAC", func(t *testing.T) {
		wantAllowed(t, wendy.CoreV1().Namespaces().Delete(ctx, "water-a", metav1.DeleteOptions{}))
	})

	t.Run("a stranger with only the generated RBAC cannot create namespaces", func(t *testing.T) {
		_, err := cluster.AsOnly("mallory").CoreV1().Namespaces().Create(ctx, namespace("water-m", nil), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || strings.Contains(err.Error(), "denied the request") {
			t.Fatalf("got %v, want RBAC's refusal", err)
		}
	})
}

// currentRegistry is the document in the registry ConfigMap.
func currentRegistry(t *testing.T) string {
	t.Helper()
	cm, err := cluster.Client.CoreV1().ConfigMaps("tenantguard-system").Get(t.Context(), "tenantguard-registry", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data["tenants.yaml"]
}

// setRegistry replaces the document in the registry ConfigMap.
func setRegistry(t *testing.T, doc string) {
	t.Helper()
	updateRegistry(t, func(string) string { return doc })
}
