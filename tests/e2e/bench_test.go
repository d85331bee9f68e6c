package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenantguard/tenantguard/generator"
)

// benchNamespaces is how many tenant namespaces BenchmarkReconcile creates:
// 1,000, or 50 with -short (make bench-smoke).
func benchNamespaces() int {
	if testing.Short() {
		return 50
	}
	return 1000
}

// BenchmarkReconcile creates 1,000 namespaces (benchNamespaces) of a tenant whose companions
// are a ResourceQuota, a LimitRange, a NetworkPolicy and two RoleBindings,
// and measures until the reconciler has applied all 5,000 on the real API
// server. Run it alone: go test -run '^$' -bench Reconcile -benchtime 1x ./tests/e2e/
func BenchmarkReconcile(b *testing.B) {
	ctx := context.Background()
	cm, err := cluster.Client.CoreV1().ConfigMaps("tenantguard-system").Get(ctx, "tenantguard-registry", metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	cm.Data["tenants.yaml"] += `
  - name: bench
    owners: [{kind: User, name: bench-owner}]
    companions:
      resourceQuota: {hard: {pods: "10"}}
      limitRange: {limits: [{type: Container, default: {cpu: 200m}}]}
`
	if _, err := cluster.Client.CoreV1().ConfigMaps("tenantguard-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(time.Second) // the registry reload
	n := benchNamespaces()
	for run := range b.N {
		start := time.Now()
		var wg sync.WaitGroup
		work := make(chan int)
		for range 8 {
			wg.Go(func() {
				for i := range work {
					name := fmt.Sprintf("bench-%d-%04d", run, i)
					if _, err := cluster.Client.CoreV1().Namespaces().Create(ctx, namespace(name, map[string]string{tenantLabel: "bench"}), metav1.CreateOptions{}); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for i := range n {
			work <- i
		}
		close(work)
		wg.Wait()
		created := time.Since(start)
		want := 5 * n * (run + 1)
		for {
			got := countCompanions(ctx, b)
			if got >= want {
				break
			}
			if time.Since(start) > 2*time.Minute {
				b.Fatalf("%d of %d companions after 2 minutes", got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
		elapsed := time.Since(start)
		b.ReportMetric(created.Seconds(), "s-to-create-namespaces")
		b.ReportMetric(elapsed.Seconds(), "s-to-all-companions")
		b.ReportMetric(float64(n)/elapsed.Seconds(), "namespaces/s")
	}
}

// countCompanions counts the companions of tenant bench in every namespace.
func countCompanions(ctx context.Context, b *testing.B) int {
	found, err := companionsMatching(ctx, "", generator.ManagedByLabel+"="+generator.ManagedByValue+","+tenantLabel+"=bench")
	if err != nil {
		b.Fatal(err)
	}
	return len(found)
}
