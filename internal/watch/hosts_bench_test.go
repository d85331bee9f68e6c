package watch

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkSlimHosts slims 20,000 Ingresses as the informer cache keeps
// them (slimHosts): cache-B/object is the live heap each slimmed object
// holds in the cache once the decoded object is dropped (the strings it
// shares with it included; the store's own index and the slice left out),
// beside the view's host index (clusterview's BenchmarkHostIndex).
func BenchmarkSlimHosts(b *testing.B) {
	const n = 20000
	var held uint64
	for b.Loop() {
		before := liveHeap()
		in := make([]*unstructured.Unstructured, n)
		for i := range in {
			in[i] = &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
				"metadata": map[string]any{
					"name": "web", "namespace": fmt.Sprintf("t%d-ns%d", i/10, i%10), "uid": fmt.Sprintf("%036d", i),
					"resourceVersion": fmt.Sprint(100000 + i), "annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{}"},
				},
				"spec": map[string]any{"ingressClassName": "nginx", "rules": []any{map[string]any{
					"host": fmt.Sprintf("web.ns%d.t%d.example.com", i%10, i/10),
					"http": map[string]any{"paths": []any{map[string]any{"path": "/", "pathType": "Prefix"}}},
				}}},
			}}
		}
		out := make([]any, n)
		for i, u := range in {
			slim, err := slimHosts(u)
			if err != nil {
				b.Fatal(err)
			}
			out[i] = slim
		}
		in = nil
		runtime.KeepAlive(in)
		held += liveHeap() - before - uint64(n)*16 // less out's own slice
		runtime.KeepAlive(out)
	}
	b.ReportMetric(float64(held)/float64(b.N)/n, "cache-B/object")
}

// liveHeap is the live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
