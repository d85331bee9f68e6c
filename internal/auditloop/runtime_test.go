package auditloop

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// settings are the runtime's settings an audit changes.
type settings struct{ procs, gcPercent int }

func current() settings { return settings{runtime.GOMAXPROCS(0), gcPercent()} }

// TestAnAuditRunsWithOneMoreProcessorAndFewerCollections: while the loop
// audits, Go's scheduler has one processor more and the collector's target
// is twice the server's; both are back after.
func TestAnAuditRunsWithOneMoreProcessorAndFewerCollections(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(300))
	before := current()
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
		want      int
	}{
		{"the collector's target is doubled", 100, 200},
		{"a collector turned off stays off", -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer debug.SetGCPercent(debug.SetGCPercent(tt.gcPercent))
			before := current()
			restore := auditSettings()
			if got, want := current(), (settings{before.procs + 1, tt.want}); got != want {
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
	defer debug.SetGCPercent(debug.SetGCPercent(300))
	before := current()
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
