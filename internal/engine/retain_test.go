package engine

import (
	"runtime"
	"testing"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/scale"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// TestDecidingInEveryNamespaceKeepsNothingPerNamespace holds the live heap
// to what the view held before requests came: a server that has decided in
// every namespace (as a long-running one has, and as each background audit
// does) must not keep a term of the policy's input per namespace, which
// every collection would mark (792 bytes and 19 objects a namespace of one
// label when the view kept them).
func TestDecidingInEveryNamespaceKeepsNothingPerNamespace(t *testing.T) {
	const tenants, namespaces = 200, 10
	eng, err := New(t.Context(), scaleRegistry(t, tenants), Options{})
	if err != nil {
		t.Fatal(err)
	}
	view := clusterview.New(registry.DefaultTenantLabel)
	scale.Fill(view, tenants, namespaces, 0)
	var reqs []*admission.Request
	for _, r := range scale.EveryNamespace(tenants, namespaces) {
		req, err := admission.Decode(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, req)
	}
	decide := func(req *admission.Request) {
		if d, err := eng.Validate(t.Context(), req, view); err != nil || !d.Allowed {
			t.Fatalf("%s: decision %+v, %v", req.Namespace, d, err)
		}
	}
	// The first half settles what the engine builds once; the second
	// half's namespaces are new to it.
	first, second := reqs[:len(reqs)/2], reqs[len(reqs)/2:]
	for _, req := range first {
		decide(req)
	}
	before := liveHeap()
	for _, req := range second {
		decide(req)
	}
	after := liveHeap()
	perNamespace := (int64(after) - int64(before)) / int64(len(second))
	t.Logf("live heap %d bytes before, %d after deciding in %d more namespaces: %d bytes a namespace", before, after, len(second), perNamespace)
	if perNamespace > 64 {
		t.Errorf("deciding in every namespace kept %d bytes a namespace", perNamespace)
	}
	runtime.KeepAlive(reqs)
	runtime.KeepAlive(view)
	runtime.KeepAlive(eng)
}

// liveHeap is the bytes of live objects after two collections (the second
// empties the pools' victim caches).
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
