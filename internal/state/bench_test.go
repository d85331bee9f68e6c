package state_test

import (
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/tests/scale"
)

// BenchmarkRegistryReload loads the 1,000-tenant scale registry and the
// same with one tenant more in turn, as a ConfigMap edit reaches serve:
// parse, validate, compile, put in force. B/op is the garbage one reload
// leaves for the collector; live-MiB is the live heap between reloads and
// peak-live-MiB the most of it a reload holds at once, sampled with the
// collector running almost continuously (GOGC 5) so that the live heap it
// reports follows the reload.
func BenchmarkRegistryReload(b *testing.B) {
	store := state.New(clusterview.New(registry.DefaultTenantLabel), state.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := store.LoadPolicy(b.Context(), "embedded", nil); err != nil {
		b.Fatal(err)
	}
	registries := [][]byte{scale.Registry(1000), scale.RegistryPlusOne(1000)}
	if err := store.LoadRegistry(b.Context(), "scale", registries[1]); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	base := liveHeap()
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Microsecond):
				if l := liveHeap(); l > peak.Load() {
					peak.Store(l)
				}
			}
		}
	}()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := store.LoadRegistry(b.Context(), "scale", registries[i%2]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	close(done)
	b.ReportMetric(float64(base)/(1<<20), "live-MiB")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-live-MiB")
}

// liveHeap is the live heap as of the last collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
