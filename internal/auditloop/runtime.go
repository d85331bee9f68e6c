package auditloop

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// auditing counts the audits under way in the process, and keeps what
// their settings changed.
var auditing struct {
	sync.Mutex
	audits int
	// procs is GOMAXPROCS before, when an audit raised it, else 0;
	// gcPercent the collector's target before, when an audit raised it,
	// else 0.
	procs, gcPercent int
}

// auditSettings gives Go's runtime an audit's settings while one runs, and
// returns what gives the settings before back. The first audit under way
// changes them, the last one to end restores them.
//
//   - One more processor (GOMAXPROCS), when the processors are all the
//     CPUs the process may run on. The audit's goroutine is locked to a
//     thread of the lowest priority (Start): while the kernel runs
//     admission's threads ahead of that thread, it keeps the processor Go's
//     scheduler gave it, and without one more admission's goroutines would
//     have one processor fewer for the audit's whole length. Under a CPU
//     limit (GOMAXPROCS below the CPU count, as Go sets it from the
//     container's cgroup) the CPUs beyond it are idle, nothing keeps the
//     audit's thread waiting, and one processor more would let the
//     container run past its quota and be throttled whole, admission
//     with it: none is added. The processors go back to the runtime's
//     default (the container's CPU limit, or else the CPU count), unless
//     the environment set GOMAXPROCS.
//
//   - Twice the collector's target (GOGC, serve's --gc-percent), when a
//     soft memory limit (serve's --memory-limit) holds the heap: the audit
//     allocates as it decodes and decides, and each collection's marks slow
//     admission's requests down; with the heap let grow twice as far
//     between collections there are half as many. The limit still holds
//     the heap: near it, collections come as often as they must. With no
//     limit, or the collector off, the target stays.
func auditSettings() (restore func()) {
	auditing.Lock()
	defer auditing.Unlock()
	if auditing.audits == 0 {
		auditing.procs, auditing.gcPercent = 0, 0
		if procs := runtime.GOMAXPROCS(0); procs >= runtime.NumCPU() {
			auditing.procs = procs
			runtime.GOMAXPROCS(procs + 1)
		}
		if percent := gcPercent(); percent > 0 && debug.SetMemoryLimit(-1) != math.MaxInt64 {
			auditing.gcPercent = percent
			debug.SetGCPercent(min(2*percent, math.MaxInt32))
		}
	}
	auditing.audits++
	return sync.OnceFunc(func() {
		auditing.Lock()
		defer auditing.Unlock()
		if auditing.audits--; auditing.audits > 0 {
			return
		}
		if auditing.gcPercent > 0 {
			debug.SetGCPercent(auditing.gcPercent)
		}
		switch {
		case auditing.procs == 0:
		case os.Getenv("GOMAXPROCS") == "":
			runtime.SetDefaultGOMAXPROCS()
		default:
			runtime.GOMAXPROCS(auditing.procs)
		}
	})
}

// gcPercent is the collector's target in force (GOGC; negative: off).
func gcPercent() int {
	sample := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return -1
	}
	// The runtime keeps it as a signed 32-bit number; off, -1, reads as
	// the largest uint64.
	v := sample[0].Value.Uint64()
	if v > math.MaxInt32 {
		return -1
	}
	return int(v)
}
