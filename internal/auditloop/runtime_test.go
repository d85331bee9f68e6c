package auditloop

import (
	"math"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"
)

// settings are the runtime's settings an audit changes.
type settings struct{ procs, gcPercent int }

func current() settings { return settings{runtime.GOMAXPROCS(0), gcPercent()} }

// serverSettings gives the test the settings of a server as serve starts
// it: the runtime's default processors (go test -cpu sets them), the given
// collector's target and soft memory limit; the test's own come back after.
func serverSettings(t *testing.T, percent int, limit int64) settings {
	t.Helper()
	procs, oldPercent, oldLimit := runtime.GOMAXPROCS(0), debug.SetGCPercent(percent), debug.SetMemoryLimit(limit)
	runtime.SetDefaultGOMAXPROCS()
	t.Cleanup(func() {
		runtime.GOMAXPROCS(procs)
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	})
	return current()
}

// TestAnAuditRunsWithOneMoreProcessorAndFewerCollections: while the loop
// audits, Go's scheduler has one processor more and the collector's target
// is twice the server's; both are back after.
func TestAnAuditRunsWithOneMoreProcessorAndFewerCollections(t *testing.T) {
	before := serverSettings(t, 300, 1<<30)
	if before.procs < runtime.NumCPU() {
		t.Skipf("GOMAXPROCS %d below the %d CPUs: no processor is added", before.procs, runtime.NumCPU())
	}
	l, _, _ := auditOfFixture(t)
	during := make(chan settings, 1)
	l.opts.Observer = observerFunc(func() {
		select {
		case during <- current():
		default:
		}
	})
	running(t, l)
	select {
	case got := <-during:
		if want := (settings{before.procs + 1, 600}); got != want {
			t.Errorf("the audit ran with %+v, want %+v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no audit")
	}
	deadline := time.Now().Add(10 * time.Second)
	for current() != before {
		if time.Now().After(deadline) {
			t.Fatalf("after the audit %+v, want %+v back", current(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAuditSettings(t *testing.T) {
	tests := []struct {
		name      string
		gcPercent int
		limit     int64
		// belowCPUs runs the server with one processor fewer than the
		// CPUs, as under a CPU limit.
		belowCPUs bool
		want      settings // relative to before: processors added, target
	}{
		{"the collector's target is doubled and a processor added", 100, 1 << 30, false, settings{1, 200}},
		{"a collector turned off stays off", -1, 1 << 30, false, settings{1, -1}},
		{"with no memory limit the target stays", 100, math.MaxInt64, false, settings{1, 100}},
		{"under a CPU limit no processor is added", 100, 1 << 30, true, settings{0, 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := serverSettings(t, tt.gcPercent, tt.limit)
			if tt.belowCPUs {
				if runtime.NumCPU() < 2 {
					t.Skip("one CPU: no processor count below it")
				}
				runtime.GOMAXPROCS(runtime.NumCPU() - 1)
				before = current()
			} else if before.procs < runtime.NumCPU() {
				t.Skipf("GOMAXPROCS %d below the %d CPUs", before.procs, runtime.NumCPU())
			}
			restore := auditSettings()
			if got, want := current(), (settings{before.procs + tt.want.procs, tt.want.gcPercent}); got != want {
				t.Errorf("during the audit %+v, want %+v", got, want)
			}
			restore()
			if got := current(); got != before {
				t.Errorf("after the audit %+v, want %+v back", got, before)
			}
		})
	}
}

// TestOverlappingAuditsChangeTheSettingsOnce: the second audit under way
// changes nothing more, and the settings come back when the last one ends.
func TestOverlappingAuditsChangeTheSettingsOnce(t *testing.T) {
	before := serverSettings(t, 300, 1<<30)
	if before.procs < runtime.NumCPU() {
		t.Skipf("GOMAXPROCS %d below the %d CPUs", before.procs, runtime.NumCPU())
	}
	during := settings{before.procs + 1, 600}
	first := auditSettings()
	second := auditSettings()
	if got := current(); got != during {
		t.Errorf("two audits under way: %+v, want %+v", got, during)
	}
	first()
	first() // restoring twice restores once
	if got := current(); got != during {
		t.Errorf("one audit still under way: %+v, want %+v", got, during)
	}
	second()
	if got := current(); got != before {
		t.Errorf("no audit under way: %+v, want %+v", got, before)
	}
}

// TestTheProcessorsGoBackToTheEnvironmentsGOMAXPROCS: with GOMAXPROCS set
// in the environment, not the runtime's default, the count comes back.
func TestTheProcessorsGoBackToTheEnvironmentsGOMAXPROCS(t *testing.T) {
	serverSettings(t, 300, 1<<30)
	set := runtime.NumCPU() + 2 // not the default, which is at most the CPUs
	t.Setenv("GOMAXPROCS", strconv.Itoa(set))
	runtime.GOMAXPROCS(set) // as the runtime read it at start
	restore := auditSettings()
	if got := runtime.GOMAXPROCS(0); got != set+1 {
		t.Errorf("during the audit %d processors, want %d", got, set+1)
	}
	restore()
	if got := runtime.GOMAXPROCS(0); got != set {
		t.Errorf("after the audit %d processors, want the environment's %d", got, set)
	}
}
