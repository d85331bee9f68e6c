package load

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenantguard/tenantguard/internal/auditloop"
	metricspkg "github.com/tenantguard/tenantguard/internal/metrics"
	"github.com/tenantguard/tenantguard/internal/state"
)

// The commands a served tenantguard started with -audit takes on its
// stdin: hold the background audit at its next list request (answered with
// an auditPaused line once it is held), and let it go on.
const (
	auditPauseCommand  = "audit-pause"
	auditResumeCommand = "audit-resume"
)

// AuditFigures are one background audit's, as the served target reports
// them in an audit line.
type AuditFigures struct {
	// N counts the audits, from 1.
	N int `json:"n"`
	// Took is the audit's duration, listing to the last report written,
	// without the time it was held while the null webhook took its turn;
	// Wall with it.
	Took time.Duration `json:"took"`
	Wall time.Duration `json:"wall"`
	// Objects checked, Violations found, Reports written (and the bytes of
	// their encoding).
	Objects     int   `json:"objects"`
	Violations  int   `json:"violations"`
	Reports     int64 `json:"reports"`
	ReportBytes int64 `json:"reportBytes"`
	// PeakRSS, PeakHeap and PeakLive are the highest resident set, heap in
	// use (objects, live or not yet swept) and live heap (as of the last
	// collection) sampled while the audit ran, in bytes.
	PeakRSS  uint64 `json:"peakRss"`
	PeakHeap uint64 `json:"peakHeap"`
	PeakLive uint64 `json:"peakLive"`
}

// Memory is a process's memory at one moment, in bytes.
type Memory struct {
	RSS  uint64 `json:"rss"`
	Heap uint64 `json:"heap"`
	Live uint64 `json:"live"`
}

// auditStatus is an audit line of a served target: one of the fields.
type auditStatus struct {
	Paused *bool `json:"auditPaused,omitempty"`
	// Listed is how many objects the audit had listed, over every audit,
	// when it was held.
	Listed   int64         `json:"auditListed,omitempty"`
	Baseline *Memory       `json:"auditBaseline,omitempty"`
	Audit    *AuditFigures `json:"audit,omitempty"`
}

// sampleMemory reads the process's memory now.
func sampleMemory() Memory {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	m := Memory{Heap: s[0].Value.Uint64(), Live: s[1].Value.Uint64()}
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.SplitSeq(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				m.RSS = kb << 10
			}
		}
	}
	return m
}

// auditRunner runs serve's background audit loop (auditloop) in the served
// tenantguard, over the scale cluster (auditCluster), back to back, held
// by the harness's commands, and reports each audit on out.
type auditRunner struct {
	cluster *auditCluster
	sink    *reportSink
	out     io.Writer
	outMu   *sync.Mutex
	// share is the loop's Share, 0 for its default.
	share float64

	mu       sync.Mutex
	n        int
	lastHeld time.Duration
	peak     Memory
	baseline bool
	reports  int64
	bytes    int64
}

// newAuditRunner readies the audit of a cluster of scale s; out receives
// its lines.
func newAuditRunner(s Scale, out io.Writer, outMu *sync.Mutex) *auditRunner {
	c := &auditCluster{scale: s}
	c.gate = *newGate()
	return &auditRunner{cluster: c, sink: &reportSink{gate: &c.gate}, out: out, outMu: outMu}
}

// line writes one JSON line.
func (r *auditRunner) line(v any) {
	data, _ := json.Marshal(v)
	r.outMu.Lock()
	defer r.outMu.Unlock()
	_, _ = fmt.Fprintf(r.out, "%s\n", data)
}

// run runs the loop, with its defaults but for the interval (none: the
// next audit starts as the last ends), and samples the memory every 20 ms
// until ctx ends.
func (r *auditRunner) run(ctx context.Context, store *state.Store) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	l := auditloop.New(store, r.cluster, r.cluster, r.sink, r.cluster.mapper(), auditloop.Options{Interval: time.Millisecond, Share: r.share, Logger: log, Observer: r})
	go r.sample(ctx)
	_ = l.Start(ctx)
}

// sample keeps the peak memory of the audit under way.
func (r *auditRunner) sample(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		m := sampleMemory()
		r.mu.Lock()
		r.peak = Memory{RSS: max(r.peak.RSS, m.RSS), Heap: max(r.peak.Heap, m.Heap), Live: max(r.peak.Live, m.Live)}
		r.mu.Unlock()
	}
}

// command handles a harness command; false for one it does not know.
func (r *auditRunner) command(cmd string) bool {
	switch cmd {
	case auditPauseCommand:
		held := r.cluster.gate.pause(time.Minute)
		r.line(auditStatus{Paused: &held, Listed: r.cluster.listed.Load()})
	case auditResumeCommand:
		r.mu.Lock()
		first := !r.baseline
		r.baseline = true
		r.mu.Unlock()
		if first {
			m := sampleMemory()
			r.line(auditStatus{Baseline: &m})
		}
		r.cluster.gate.resume()
	default:
		return false
	}
	return true
}

// Audited reports an audit (auditloop.Observer).
func (r *auditRunner) Audited(violations map[metricspkg.AuditKey]int, objects int, took time.Duration, _ time.Time) {
	held := r.cluster.gate.Held()
	reports, bytes := r.sink.applied.Load(), r.sink.bytes.Load()
	m := sampleMemory()
	r.mu.Lock()
	r.n++
	f := AuditFigures{N: r.n, Wall: took, Took: took - (held - r.lastHeld), Objects: objects, Reports: reports - r.reports, ReportBytes: bytes - r.bytes,
		PeakRSS: max(r.peak.RSS, m.RSS), PeakHeap: max(r.peak.Heap, m.Heap), PeakLive: max(r.peak.Live, m.Live)}
	for _, n := range violations {
		f.Violations += n
	}
	r.lastHeld, r.reports, r.bytes, r.peak = held, reports, bytes, Memory{}
	r.mu.Unlock()
	r.line(auditStatus{Audit: &f})
}

// AuditFailed reports a failed audit (auditloop.Observer).
func (r *auditRunner) AuditFailed() {
	r.line(map[string]string{"auditError": "the background audit failed"})
}
