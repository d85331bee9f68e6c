package auditloop

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// auditing counts the audits under way in the process, and keeps the
// runtime's settings from before the first of them.
var auditing struct {
	sync.Mutex
	audits int
	// procs is GOMAXPROCS and gcPercent the collector's target before.
	procs, gcPercent int
}

// auditSettings gives Go's runtime an audit's settings while one runs, and
// returns what gives the settings before back. The first audit under way
// changes them, the last one to end restores them.
//
//   - One more processor (GOMAXPROCS). The audit's goroutine is locked to a
//     thread of the lowest priority (Start): while the kernel runs
//     admission's threads ahead of that thread, it keeps the processor Go's
//     scheduler gave it; without one more, admission's goroutines would
//     have one processor fewer for the audit's whole length. It goes back
//     to the runtime's default, which follows the container's CPU limit,
//     unless the environment set GOMAXPROCS.
//
//   - Twice the collector's target (GOGC, serve's --gc-percent): the audit
//     allocates as it decodes and decides, and each collection's marks slow
//     admission's requests down; with the heap let grow twice as far
//     between collections there are half as many. The soft memory limit
//     (serve's --memory-limit) still holds the heap. A collector turned
//     off stays off.
func auditSettings() (restore func()) {
	auditing.Lock()
	defer auditing.Unlock()
	if auditing.audits == 0 {
		auditing.procs = runtime.GOMAXPROCS(0)
		runtime.GOMAXPROCS(auditing.procs + 1)
		if auditing.gcPercent = gcPercent(); auditing.gcPercent > 0 {
			debug.SetGCPercent(2 * auditing.gcPercent)
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
		if os.Getenv("GOMAXPROCS") == "" {
			runtime.SetDefaultGOMAXPROCS()
		} else {
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
	// The runtime keeps it as a signed number; off, -1, reads as the
	// largest uint64.
	v := sample[0].Value.Uint64()
	if v > math.MaxInt32 {
		return -1
	}
	return int(v)
}
