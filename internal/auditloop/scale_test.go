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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/tests/scale"
)

// BenchmarkAnAuditOfTheScaleFixture audits 100,000 ordinary pods (100
// tenants, 10 namespaces of 100 pods each; quotas raised so that none is
// over) listed 500 a page, with the loop's pauses: the duration of one
// audit and the peak of the live heap above the one before it.
func BenchmarkAnAuditOfTheScaleFixture(b *testing.B) {
	const tenants, namespaces, pods = 100, 10, 100
	doc := scale.Registry(tenants)
	reg, err := registry.Parse("scale.yaml", doc)
	if err != nil {
		b.Fatal(err)
	}
	view := clusterview.New(reg.TenantLabel())
	scale.Fill(view, tenants, namespaces, pods)
	store := state.New(view, state.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	roomy := []byte(strings.ReplaceAll(string(doc), "quotas: {pods: 200,", "quotas: {pods: 2000,"))
	if err := store.LoadRegistry(b.Context(), "scale", roomy); err != nil {
		b.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	reader := &podPages{tenants: tenants, namespaces: namespaces, pods: pods}
	l := &Loop{store: store, reader: reader, writer: fake.NewClientBuilder().Build(), mapper: mapper, opts: Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	l.opts.defaults()
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
		if err != nil || result.Objects != tenants*namespaces*(pods+1) || len(result.Rows) != 0 {
			b.Fatalf("%v objects, %d rows, error %v", result, len(result.Rows), err)
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

// podPages serves Namespaces and ordinary Pods page by page.
type podPages struct {
	client.Reader
	tenants, namespaces, pods int
}

func (r *podPages) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	var o client.ListOptions
	o.ApplyOptions(opts)
	u, ok := list.(*unstructured.UnstructuredList)
	if !ok {
		return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "openreports.io", Kind: "Report"}}
	}
	per := r.pods
	if u.GetKind() == "NamespaceList" {
		per = 1
	} else if u.GetKind() != "PodList" {
		u.Items = nil
		u.SetContinue("")
		return nil
	}
	total := r.tenants * r.namespaces * per
	start := 0
	if o.Continue != "" {
		start, _ = strconv.Atoi(o.Continue)
	}
	end := min(start+int(o.Limit), total)
	u.Items = make([]unstructured.Unstructured, 0, end-start)
	for n := start; n < end; n++ {
		tenant, ns := n/per/r.namespaces, n/per%r.namespaces
		namespace := fmt.Sprintf("t%d-ns%d", tenant, ns)
		if per == 1 {
			u.Items = append(u.Items, unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
				"metadata": map[string]any{"name": namespace, "uid": "u" + strconv.Itoa(n), "labels": map[string]any{registry.DefaultTenantLabel: fmt.Sprintf("t%d", tenant), "kubernetes.io/metadata.name": namespace}}}})
			continue
		}
		u.Items = append(u.Items, unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": fmt.Sprintf("p%d", n%per), "namespace": namespace, "uid": "u" + strconv.Itoa(n), "resourceVersion": "1"},
			"spec": map[string]any{
				"containers":       []any{map[string]any{"name": "web", "image": "nginx", "imagePullPolicy": "Always"}},
				"runtimeClassName": "gvisor", "priorityClassName": "tenant-low",
				"nodeSelector": map[string]any{"pool": fmt.Sprintf("t%d", tenant)},
				"tolerations":  []any{map[string]any{"key": "pool", "operator": "Equal", "value": fmt.Sprintf("t%d", tenant), "effect": "NoSchedule"}},
			},
			"status": map[string]any{"phase": "Running"}}})
	}
	u.SetContinue("")
	if end < total {
		u.SetContinue(strconv.Itoa(end))
	}
	return nil
}
