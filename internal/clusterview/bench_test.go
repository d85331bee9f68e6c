package clusterview_test

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/scale"
)

// BenchmarkHostIndex fills a view's host index with the scale fixture's
// edge, 20,000 Ingresses and routes (two per namespace of 1,000 tenants'
// 10,000 namespaces, which the view holds first), the way their informers
// do. index-MiB is the live heap the index adds, B/host per host indexed.
func BenchmarkHostIndex(b *testing.B) {
	const tenants, namespaces = 1000, 10
	var index, hosts uint64
	for b.Loop() {
		v := clusterview.New(registry.DefaultTenantLabel)
		for i := range tenants {
			for j := range namespaces {
				v.Upsert(clusterview.Object{Kind: "Namespace", Resource: "namespaces", Name: fmt.Sprintf("t%d-ns%d", i, j),
					Labels: map[string]string{registry.DefaultTenantLabel: fmt.Sprintf("t%d", i)}})
			}
		}
		// The informers' objects, made before measuring: the cache keeps
		// them whatever the index does.
		var edge []clusterview.Object
		for i := range tenants {
			for j := range namespaces {
				scale.EdgeObjects(i, j, func(o clusterview.Object) { edge = append(edge, o) })
			}
		}
		before := liveHeap()
		for k := range edge {
			v.UpdateHosts(nil, &edge[k])
		}
		index += liveHeap() - before
		hosts += uint64(v.HostCount())
		runtime.KeepAlive(edge)
		runtime.KeepAlive(v)
	}
	b.ReportMetric(float64(index)/float64(b.N)/(1<<20), "index-MiB")
	b.ReportMetric(float64(index)/float64(hosts), "B/host")
}

// liveHeap is the live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// BenchmarkWildcardOverManyHosts asks who holds what a wildcard covers
// when 10,000 Ingresses of other namespaces serve a host each under it (a
// cluster's shared apps domain): one pass over the index, and the holders
// listed once each.
func BenchmarkWildcardOverManyHosts(b *testing.B) {
	v := clusterview.New(registry.DefaultTenantLabel)
	const n = 10000
	for i := range n {
		ns := fmt.Sprintf("t%d-web", i)
		v.Upsert(clusterview.Object{Kind: "Namespace", Resource: "namespaces", Name: ns, Labels: map[string]string{registry.DefaultTenantLabel: fmt.Sprintf("t%d", i)}})
		ing := clusterview.Object{Group: "networking.k8s.io", Kind: "Ingress", Resource: "ingresses", Namespace: ns, Name: "web",
			Hosts: []string{fmt.Sprintf("shop%d.apps.example.com", i), fmt.Sprintf("api%d.apps.example.com", i)}}
		v.UpdateHosts(nil, &ing)
	}
	self := clusterview.Holder{Group: "networking.k8s.io", Kind: "Ingress", Namespace: "t0-edge", Name: "all"}
	for b.Loop() {
		found := v.HostHolders(self, []string{"*.apps.example.com"})
		if len(found["*.apps.example.com"]) != n {
			b.Fatalf("%d holders, want %d", len(found["*.apps.example.com"]), n)
		}
	}
}
