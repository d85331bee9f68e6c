package auditloop

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/tests/scale"
)

// BenchmarkAnAuditOfTheScaleFixture audits 100,000 ordinary pods (100
// tenants, 10 namespaces of 100 pods each; quotas raised so that none is
// over) listed in pages of the default size, with the loop's pauses: the
// duration of one audit and the peak of the live heap above the one before
// it.
func BenchmarkAnAuditOfTheScaleFixture(b *testing.B) {
	tenants, namespaces, pods := 100, 10, 100
	if testing.Short() {
		tenants = 5 // the same audit of a smaller cluster (make bench-smoke)
	}
	doc := scale.Registry(tenants)
	reg, err := registry.Parse("scale.yaml", doc)
	if err != nil {
		b.Fatal(err)
	}
	view := clusterview.New(reg.TenantLabel())
	scale.Fill(view, tenants, namespaces, pods)
	store := state.New(view, state.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	roomy := []byte(strings.NewReplacer("quotas: {pods: 200,", "quotas: {pods: 2000,",
		`requests.cpu: "30", requests.memory: 40Gi, limits.cpu: "120", limits.memory: 160Gi`, `requests.cpu: "300", requests.memory: 400Gi, limits.cpu: "1200", limits.memory: 1600Gi`).Replace(string(doc)))
	if err := store.LoadRegistry(b.Context(), "scale", roomy); err != nil {
		b.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	l := New(store, &podPages{tenants: tenants, namespaces: namespaces, pods: pods}, &pagedReader{}, fake.NewClientBuilder().Build(), mapper, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for b.Loop() {
		runtime.GC()
		base := liveHeap()
		var peak atomic.Uint64
		done := make(chan struct{})
		go func() {
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					if h := liveHeap(); h > peak.Load() {
						peak.Store(h)
					}
				}
			}
		}()
		started := time.Now()
		result, err := l.Once(b.Context())
		took := time.Since(started)
		close(done)
		if err != nil {
			b.Fatal(err)
		}
		if result.Objects != tenants*namespaces*(pods+1) || len(result.Rows) != 0 {
			b.Fatalf("%d objects, %d rows (the first: %v)", result.Objects, len(result.Rows), result.Rows[:min(1, len(result.Rows))])
		}
		b.ReportMetric(took.Seconds(), "s/audit")
		b.ReportMetric(float64(peak.Load()-min(base, peak.Load()))/(1<<20), "MiB-peak-heap-growth")
	}
}

// liveHeap is the heap's bytes in objects, live or not yet swept.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// podPages serves Namespaces and ordinary Pods page by page (Pager), in
// JSON as the API server lists them; no other kind.
type podPages struct {
	tenants, namespaces, pods int
}

func (r *podPages) Page(_ context.Context, gvr schema.GroupVersionResource, limit int64, token string) ([]byte, error) {
	per := r.pods
	switch gvr.Resource {
	case "namespaces":
		per = 1
	case "pods":
	default:
		return []byte(`{"metadata":{},"items":[]}`), nil
	}
	total := r.tenants * r.namespaces * per
	start := 0
	if token != "" {
		start, _ = strconv.Atoi(token)
	}
	end := min(start+int(limit), total)
	next := ""
	if end < total {
		next = strconv.Itoa(end)
	}
	b := fmt.Appendf(nil, `{"metadata":{"continue":%q},"items":[`, next)
	for n := start; n < end; n++ {
		if n > start {
			b = append(b, ',')
		}
		tenant, ns := n/per/r.namespaces, n/per%r.namespaces
		namespace := fmt.Sprintf("t%d-ns%d", tenant, ns)
		if per == 1 {
			b = fmt.Appendf(b, `{"metadata":{"name":%q,"uid":"u%d","labels":{%q:"t%d","kubernetes.io/metadata.name":%q}}}`, namespace, n, registry.DefaultTenantLabel, tenant, namespace)
			continue
		}
		b = fmt.Appendf(b, `{"metadata":{"name":"p%d","namespace":%q,"uid":"u%d","resourceVersion":"1"},`+
			`"spec":{"containers":[{"name":"web","image":"nginx","imagePullPolicy":"Always","resources":%s}],"runtimeClassName":"gvisor","priorityClassName":"tenant-low",`+
			`"nodeSelector":{"pool":"t%d"},"tolerations":[{"key":"pool","operator":"Equal","value":"t%d","effect":"NoSchedule"}]},"status":{"phase":"Running"}}`,
			n%per, namespace, n, scale.PodResources, tenant, tenant)
	}
	return append(b, "]}"...), nil
}
