package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/tests/live"
)

// asking gives a pod's container a CPU request of cpu.
func asking(cpu string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
}

// TestABurstOfPodsAgainstATenantResourceQuota sends 50 parallel creates of
// pods asking for 100m of CPU through a real API server, against a tenant
// resource quota of 1500m with 500m in use in another of its namespaces:
// room for 10. One replica and two strict replicas must admit exactly 10;
// two local replicas may overshoot by one room, and the figure is logged.
// Two tenants' bursts run at once in the last scenario, each exact.
func TestABurstOfPodsAgainstATenantResourceQuota(t *testing.T) {
	ctx := t.Context()
	c, err := live.Start(ctx, live.Options{ServeArgs: []string{"--generator=false"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	scenarios := []struct {
		tenants  []string
		replicas int
		args     []string
		most     int
	}{
		{[]string{"sum-one"}, 1, nil, room},
		{[]string{"sum-local"}, 2, nil, 2 * room},
		{[]string{"sum-strict"}, 2, []string{"--quota-mode=strict"}, room},
		{[]string{"sum-a", "sum-b"}, 2, []string{"--quota-mode=strict"}, room},
	}
	var tenants strings.Builder
	for _, s := range scenarios {
		for _, name := range s.tenants {
			fmt.Fprintf(&tenants, "  - name: %s\n    owners: [{kind: User, name: burster}]\n    resourceQuota: {hard: {requests.cpu: 1500m}}\n", name)
		}
	}
	addTenants(t, c, tenants.String())
	grantLedgers(t, c)
	admin := fastClient(t, c.Admin)
	for _, s := range scenarios {
		for _, name := range s.tenants {
			for _, ns := range []string{name + "-ns", name + "-busy"} {
				eventually(t, "namespace "+ns, func(ctx context.Context) error {
					_, err := admin.CoreV1().Namespaces().Create(ctx, namespace(ns, map[string]string{tenantLabel: name}), metav1.CreateOptions{})
					return err
				})
			}
			// 500m in use in the tenant's other namespace, admitted by the
			// server under test.
			eventually(t, "the busy pod of "+name, func(ctx context.Context) error {
				_, err := admin.CoreV1().Pods(name+"-busy").Create(ctx, pod("busy", asking("500m")), metav1.CreateOptions{})
				return err
			})
		}
	}
	for _, s := range scenarios {
		t.Run(fmt.Sprintf("%v: %d replicas %v", s.tenants, s.replicas, s.args), func(t *testing.T) {
			behindBalancer(t, c, s.replicas, s.args...)
			n := len(s.tenants)
			admitted, refused, elapsed := parallelCreates(t, n*burst, "tenant-resource-quota", func(ctx context.Context, i int) error {
				_, err := admin.CoreV1().Pods(s.tenants[i%n]+"-ns").Create(ctx, pod(fmt.Sprintf("p%02d", i/n), asking("100m")), metav1.CreateOptions{})
				return err
			})
			t.Logf("%v: %d of %d pods of 100m admitted (room for %d each), %d refused by tenant-resource-quota, burst took %v", s.tenants, admitted, n*burst, room, refused, elapsed.Round(1e6))
			if admitted+refused != n*burst {
				t.Fatalf("%d admitted + %d refused by tenant-resource-quota, want %d", admitted, refused, n*burst)
			}
			for _, name := range s.tenants {
				stored := storedPods(t, admin, name+"-ns")
				if stored < room || stored > s.most {
					t.Fatalf("tenant %s: %d pods stored, want %d to %d", name, stored, room, s.most)
				}
			}
			if s.args != nil {
				for _, name := range s.tenants {
					cm, err := admin.CoreV1().ConfigMaps(live.Namespace).Get(ctx, quota.NamePrefix+name+".usage", metav1.GetOptions{})
					if err != nil {
						t.Fatalf("the strict ledger of usage: %v", err)
					}
					if got := strings.Count(cm.Data["claims"], `"expires"`); got != room {
						t.Fatalf("the ledger of usage of %s holds %d entries, want the %d admitted", name, got, room)
					}
				}
			}
		})
	}
}

func storedPods(t *testing.T, client kubernetes.Interface, namespace string) int {
	t.Helper()
	pods, err := client.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(pods.Items)
}
