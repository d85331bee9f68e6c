package clusterview

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/tenantguard/tenantguard/internal/usage"
)

// TestCountsPerNamespaceHoldNoPointers holds the view's counts to what the
// garbage collector does not walk: every collection marks the live heap,
// and the view's counts per namespace and quota key (a pod count and four
// resource sums in each of 10,000 namespaces at the scale fixture), keyed
// by two strings, took 316 scanned bytes a namespace here. The
// pods' namespaces are not upserted, so that what a namespace itself keeps
// (its name and labels) is not counted.
func TestCountsPerNamespaceHoldNoPointers(t *testing.T) {
	const namespaces, pods = 5000, 4
	podUsage := usage.List{{Key: "limits.cpu", N: 500}, {Key: "limits.memory", N: 512 << 20}, {Key: "requests.cpu", N: 100}, {Key: "requests.memory", N: 128 << 20}}
	v := New("tenant")
	fill := func(from, to int) {
		for i := from; i < to; i++ {
			ns := fmt.Sprintf("ns%d", i)
			for j := range pods {
				v.Upsert(Object{Kind: "Pod", Resource: "pods", Namespace: ns, Name: fmt.Sprintf("p%d", j), Usage: podUsage})
			}
		}
	}
	// The first half grows the maps; the second half's entries are what
	// is measured.
	fill(0, namespaces/2)
	before := scannableHeap()
	fill(namespaces/2, namespaces)
	after := scannableHeap()
	perNamespace := (int64(after) - int64(before)) / (namespaces / 2)
	t.Logf("scannable heap %d bytes before, %d after counting in %d more namespaces: %d bytes a namespace", before, after, namespaces/2, perNamespace)
	if perNamespace > 64 {
		t.Errorf("the view's counts take %d scanned bytes a namespace", perNamespace)
	}
	runtime.KeepAlive(v)
}

// scannableHeap is the bytes of the live heap the collector scans for
// pointers, after two collections.
func scannableHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
