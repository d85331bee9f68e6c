package audit

import (
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/scale"
)

// BenchmarkAuditPod is the audit's cost of one pod of the scale fixture
// (100 tenants, 10 namespaces and 100 pods each: 100,000 pods), an
// ordinary pod every rule admits, as admission stored it (mutated
// already): building its CREATE, mutating (no patch) and deciding it. Times 100,000 it is the CPU an audit of the fixture spends
// deciding, besides listing.
func BenchmarkAuditPod(b *testing.B) {
	reg, err := registry.Parse("scale.yaml", scale.Registry(100))
	if err != nil {
		b.Fatal(err)
	}
	e, err := engine.New(b.Context(), reg, engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	view := clusterview.New(registry.DefaultTenantLabel)
	scale.Fill(view, 100, 10, 19)
	a := New(e, view, nil)
	pods := make([]Object, 1000)
	for i := range pods {
		ns := fmt.Sprintf("t%d-ns%d", i%100, i%10)
		name := fmt.Sprintf("p%d", i%19)
		var err error
		pods[i], err = FromMap(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "namespace": ns, "uid": "u", "resourceVersion": "1"},
			"spec": map[string]any{
				"containers":       []any{map[string]any{"name": "web", "image": "nginx", "imagePullPolicy": "Always", "resources": podResources(b)}},
				"runtimeClassName": "gvisor", "priorityClassName": "tenant-low",
				"nodeSelector": map[string]any{"pool": fmt.Sprintf("t%d", i%100)},
				"tolerations":  []any{map[string]any{"key": "pool", "operator": "Equal", "value": fmt.Sprintf("t%d", i%100), "effect": "NoSchedule"}},
			},
			"status": map[string]any{"phase": "Running"},
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if rows, err := a.Check(b.Context(), &pods[0]); err != nil || len(rows) > 0 {
		b.Fatalf("the pod is not an ordinary one: %v %v", rows, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := a.Check(b.Context(), &pods[i%len(pods)]); err != nil {
			b.Fatal(err)
		}
	}
}

// podResources are the scale fixture's container resources, decoded: every
// tenant has a quota on them.
func podResources(tb testing.TB) map[string]any {
	var r map[string]any
	if err := json.Unmarshal([]byte(scale.PodResources), &r); err != nil {
		tb.Fatal(err)
	}
	return r
}
