package load

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenantguard/tenantguard/internal/auditloop"
)

// TargetAudited is tenantguard auditing in the background while it serves.
const TargetAudited = "tenantguard+audit"

// AuditLoadConfig is one measurement of admission while the background
// audit runs (AuditLoad).
type AuditLoadConfig struct {
	// Scale is the cluster every tenantguard holds, and the one the audit
	// lists.
	Scale Scale
	// Corpus is the number of distinct requests sent in turn.
	Corpus int
	// Rate is the open-loop rate, Workers the most requests in flight.
	Rate    float64
	Workers int
	// Duration is each target's share of the run, taken in Rounds turns.
	Duration time.Duration
	Rounds   int
	// Warmup runs before each target's figures, untimed, saturated.
	Warmup time.Duration
	// Idle adds tenantguard without the audit to the turns, for reference.
	Idle bool
	// Share is the audit's share of the time it runs
	// (auditloop.Options.Share); 0 is the loop's default.
	Share float64
	// MemoryLimit and GCPercent are tenantguard's memory settings, as
	// serve's --memory-limit and --gc-percent take them.
	MemoryLimit, GCPercent string
	// ProfileDir, when set, receives a CPU profile of each served target
	// (TARGET.pprof).
	ProfileDir string
	// Log receives progress lines.
	Log io.Writer
}

// AuditLoadReport is what AuditLoad measured.
type AuditLoadReport struct {
	Date     string        `json:"date"`
	Machine  string        `json:"machine"`
	Versions string        `json:"versions"`
	Command  string        `json:"command"`
	Scale    Scale         `json:"scale"`
	Corpus   int           `json:"corpus"`
	Rate     float64       `json:"rate"`
	Duration time.Duration `json:"duration"`
	Rounds   int           `json:"rounds"`
	// Share is the audit's share of the time it runs; 0 is the loop's
	// default.
	Share float64 `json:"share,omitempty"`
	// MemoryLimit and GCPercent are both tenantguards' memory settings.
	MemoryLimit string `json:"memoryLimit"`
	GCPercent   string `json:"gcPercent,omitempty"`
	// Results are each target's run over all its turns: the null webhook,
	// tenantguard without the audit (when measured) and TargetAudited.
	Results []Result `json:"results"`
	// Baseline is TargetAudited's memory before its first audit (the scale
	// view loaded, warmed up); Audits are the audits it completed during
	// its turns.
	Baseline Memory         `json:"baseline"`
	Audits   []AuditFigures `json:"audits"`
	// PeakRSS is each target's peak resident set over its life, in MiB.
	PeakRSS map[string]float64 `json:"peakRssMiB"`
}

// AuditLoad starts the null webhook and tenantguard auditing in the
// background (and, with cfg.Idle, tenantguard without the audit), warms
// each up, then sends each, in turns, cfg.Rate requests a second,
// open-loop. The audit runs back to back inside the auditing tenantguard's
// process, serve's background audit loop over the scale cluster
// (auditCluster), during that target's turns only: it is held at its next
// list request while another target takes its turn, so that the others'
// figures are not charged for it.
func AuditLoad(ctx context.Context, cfg AuditLoadConfig) (*AuditLoadReport, error) {
	f, err := newFleet(Config{Scale: cfg.Scale, Corpus: cfg.Corpus, Warmup: cfg.Warmup, Saturate: Run{Mode: Saturated, Workers: SaturatedWorkers},
		OpenWorkers: cfg.Workers, MemoryLimit: cfg.MemoryLimit, GCPercent: cfg.GCPercent, ProfileDir: cfg.ProfileDir, Log: cfg.Log})
	if err != nil {
		return nil, err
	}
	defer f.close()
	builds := []Build{{Name: TargetNull, Target: TargetNull}}
	if cfg.Idle {
		builds = append(builds, Build{Name: TargetTenantguard, Target: TargetTenantguard})
	}
	builds = append(builds, Build{Name: TargetAudited, Target: TargetTenantguard, Audit: true, AuditShare: cfg.Share})
	for _, b := range builds {
		if _, err := f.launch(ctx, b); err != nil {
			return nil, err
		}
	}
	rounds := max(cfg.Rounds, 1)
	run := Run{Mode: OpenLoop, Rate: cfg.Rate, Workers: cfg.Workers, Duration: cfg.Duration}
	segment := run
	segment.Duration = run.Duration / time.Duration(rounds)
	all := make([]*series, len(f.served))
	for i := range all {
		all[i] = newSeries()
	}
	for round := range rounds {
		for _, i := range turns(len(f.served), round) {
			if ctx.Err() != nil {
				break
			}
			s := f.served[i]
			audited := s.target.Name == TargetAudited
			if audited {
				if err := s.process.ResumeAudit(); err != nil {
					return nil, err
				}
			}
			all[i].drive(ctx, s.target, f.corpus, segment)
			if audited {
				if err := s.process.PauseAudit(); err != nil {
					return nil, err
				}
			}
		}
		audits := &f.served[len(f.served)-1].process.audits
		audits.mu.Lock()
		_, _ = fmt.Fprintf(cfg.Log, "round %d of %d: %d audits completed, %d objects listed\n", round+1, rounds, len(audits.audits), audits.listed)
		audits.mu.Unlock()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	report := &AuditLoadReport{Scale: cfg.Scale, Corpus: cfg.Corpus, Rate: cfg.Rate, Duration: cfg.Duration, Rounds: rounds, Share: cfg.Share, MemoryLimit: cfg.MemoryLimit, GCPercent: cfg.GCPercent, PeakRSS: map[string]float64{}}
	for i, s := range f.served {
		res := all[i].result(s.target.Name, run)
		_, _ = fmt.Fprintf(cfg.Log, "%s: %s\n", res.Target, res.Summary())
		report.Results = append(report.Results, res)
		_, report.PeakRSS[s.target.Name], _ = s.process.Memory()
		if s.target.Name == TargetAudited {
			report.Audits = s.process.audits.completed()
			if b := s.process.audits.baselineMemory(); b != nil {
				report.Baseline = *b
			}
		}
	}
	return report, nil
}

// auditLog is what a served target auditing in the background reported.
type auditLog struct {
	mu       sync.Mutex
	baseline *Memory
	audits   []AuditFigures
	// listed is how many objects the audits had listed at the last pause.
	listed int64
	// paused receives the answers to the pause command.
	paused chan bool
}

func newAuditLog() auditLog { return auditLog{paused: make(chan bool, 1)} }

// add records an audit line.
func (l *auditLog) add(st auditStatus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case st.Paused != nil:
		l.listed = st.Listed
		select {
		case l.paused <- *st.Paused:
		default:
		}
	case st.Baseline != nil:
		l.baseline = st.Baseline
	case st.Audit != nil:
		l.audits = append(l.audits, *st.Audit)
	}
}

// completed are the audits reported so far.
func (l *auditLog) completed() []AuditFigures {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.audits)
}

// baselineMemory is the memory before the first audit, nil before it.
func (l *auditLog) baselineMemory() *Memory {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.baseline
}

// ResumeAudit lets a served target's background audit go on.
func (p *Process) ResumeAudit() error {
	_, err := fmt.Fprintln(p.stdin, auditResumeCommand)
	return err
}

// PauseAudit holds a served target's background audit at its next list
// request and returns once it is held.
func (p *Process) PauseAudit() error {
	if _, err := fmt.Fprintln(p.stdin, auditPauseCommand); err != nil {
		return err
	}
	select {
	case held := <-p.audits.paused:
		if !held {
			return fmt.Errorf("%s: the audit was not held within a minute of the pause", p.name)
		}
		return nil
	case <-p.done:
		return fmt.Errorf("%s exited: %s", p.name, p.logs.String())
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("%s did not answer the audit pause in 2 minutes", p.name)
	}
}

// result finds a target's run.
func (r *AuditLoadReport) result(target string) (Result, bool) {
	for _, res := range r.Results {
		if res.Target == target {
			return res, true
		}
	}
	return Result{}, false
}

// Ratio is the audited tenantguard's p99 over the null webhook's, and
// whether both were measured.
func (r *AuditLoadReport) Ratio() (float64, bool) {
	null, okNull := r.result(TargetNull)
	tg, okTG := r.result(TargetAudited)
	return safeRatio(float64(tg.Latency.P99), float64(null.Latency.P99)), okNull && okTG
}

// Met reports whether the latency target was met while auditing: p99 at
// most 1.5× the null webhook's, on schedule, at least one audit completed.
func (r *AuditLoadReport) Met() bool {
	tg, _ := r.result(TargetAudited)
	ratio, ok := r.Ratio()
	return ok && ratio <= 1.5 && !tg.Behind && len(r.Audits) > 0
}

// Problems are what makes the run unusable: errors, wrong answers, no
// audit completed.
func (r *AuditLoadReport) Problems() []string {
	var out []string
	for _, res := range r.Results {
		if res.Errors+res.Wrong > 0 {
			out = append(out, fmt.Sprintf("%s: %d errors and %d wrong answers; first: %s", res.Target, res.Errors, res.Wrong, res.FirstError))
		}
	}
	if len(r.Audits) == 0 {
		out = append(out, "no audit completed during the run: lengthen -duration")
	}
	return out
}

// AuditStats sums up the audits.
type AuditStats struct {
	// Count of audits; Objects, Violations and Reports of the last one.
	Count, Objects, Violations int
	Reports                    int64
	// Took, without the other targets' turns: fastest, median, slowest.
	Fastest, Median, Slowest time.Duration
	// Peak memory over every audit.
	Peak Memory
}

// Stats sums up the audits.
func (r *AuditLoadReport) Stats() AuditStats {
	var s AuditStats
	if len(r.Audits) == 0 {
		return s
	}
	took := make([]time.Duration, 0, len(r.Audits))
	for _, a := range r.Audits {
		took = append(took, a.Took)
		s.Peak = Memory{RSS: max(s.Peak.RSS, a.PeakRSS), Heap: max(s.Peak.Heap, a.PeakHeap), Live: max(s.Peak.Live, a.PeakLive)}
	}
	slices.Sort(took)
	last := r.Audits[len(r.Audits)-1]
	s.Count, s.Objects, s.Violations, s.Reports = len(r.Audits), last.Objects, last.Violations, last.Reports
	s.Fastest, s.Median, s.Slowest = took[0], took[len(took)/2], took[len(took)-1]
	return s
}

// mib is bytes in MiB.
func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// Write writes the runs, the latency target and the audits as Markdown
// tables: what the section of BENCHMARKS.md and the command print.
func (r *AuditLoadReport) Write(w io.Writer) {
	null, _ := r.result(TargetNull)
	_, _ = fmt.Fprintln(w, "| target | requests | errors | wrong | req/s | p50 | p90 | p99 | p99.9 | max | p99 / null's |")
	_, _ = fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, res := range r.Results {
		l := res.Latency
		rate := fmt.Sprintf("%.0f", res.Throughput)
		if res.Behind {
			rate += " (behind)"
		}
		_, _ = fmt.Fprintf(w, "| %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %.2f× |\n", res.Target, res.Requests, res.Errors, res.Wrong, rate,
			round(l.P50), round(l.P90), round(l.P99), round(l.P999), round(l.Max), safeRatio(float64(l.P99), float64(null.Latency.P99)))
	}
	tg, _ := r.result(TargetAudited)
	ratio, ok := r.Ratio()
	met := "no"
	switch {
	case !ok:
		met = "—"
	case r.Met():
		met = "yes"
	}
	_, _ = fmt.Fprintf(w, "\n| target | measured | met |\n| --- | --- | --- |\n| p99 at %.0f req/s open-loop while the audit runs ≤ 1.5× the null webhook's | %s vs %s: %.2f× | %s |\n",
		r.Rate, round(tg.Latency.P99), round(null.Latency.P99), ratio, met)
	s := r.Stats()
	_, _ = fmt.Fprintf(w, "\n%d audits completed in %s's turns; each checked %d objects and found %d violations (%d reports written).\n", s.Count, TargetAudited, s.Objects, s.Violations, s.Reports)
	if s.Count > 0 {
		_, _ = fmt.Fprintf(w, "Audit duration (the other targets' turns left out): fastest %s, median %s, slowest %s.\n", round(s.Fastest), round(s.Median), round(s.Slowest))
	}
	_, _ = fmt.Fprintf(w, "\n| memory of %s | RSS | Go heap in use | live heap (last GC) |\n| --- | --- | --- | --- |\n", TargetAudited)
	_, _ = fmt.Fprintf(w, "| before the first audit (view loaded, warmed up) | %.0f MiB | %.0f MiB | %.0f MiB |\n", mib(r.Baseline.RSS), mib(r.Baseline.Heap), mib(r.Baseline.Live))
	_, _ = fmt.Fprintf(w, "| peak while auditing (sampled every 20 ms) | %.0f MiB | %.0f MiB | %.0f MiB |\n", mib(s.Peak.RSS), mib(s.Peak.Heap), mib(s.Peak.Live))
	_, _ = fmt.Fprintf(w, "\nPeak RSS over each process's life: ")
	for i, res := range r.Results {
		if i > 0 {
			_, _ = fmt.Fprint(w, ", ")
		}
		_, _ = fmt.Fprintf(w, "%s %.0f MiB", res.Target, r.PeakRSS[res.Target])
	}
	_, _ = fmt.Fprintln(w, ".")
}

// Markers delimit the section of BENCHMARKS.md that `make bench-audit`
// rewrites.
const (
	auditBeginMarker = "<!-- make bench-audit: begin (generated, do not edit) -->"
	auditEndMarker   = "<!-- make bench-audit: end -->"
)

// Markdown is the report as BENCHMARKS.md's generated section of `make
// bench-audit`, markers included.
func (r *AuditLoadReport) Markdown(note string) string {
	var b strings.Builder
	_, _ = fmt.Fprintf(&b, "%s\n## `make bench-audit`, %s\n\n", auditBeginMarker, r.Date)
	_, _ = fmt.Fprintf(&b, "Machine: %s. %s. Command: `%s`.\n", r.Machine, r.Versions, r.Command)
	if note != "" {
		_, _ = fmt.Fprintf(&b, "%s\n", note)
	}
	_, _ = fmt.Fprintf(&b, `
Admission while the background audit runs (issue 35: "it must not hurt admission"). The scale
view (%d tenants, %d namespaces, %d pods, %d Ingresses and HTTPRoutes) and %d distinct requests
of the mixed corpus sent at %.0f/s open-loop to each target in turns, %s each in %d turns. `+"`%s`"+`
is one `+"`tgload serve`"+` process running tenantguard's admission server and, beside it on the
same store, serve's background audit loop (`+"`internal/auditloop`"+`, its defaults: %d objects a
page, a pause every %d objects, at least %s and %s as long as they took to check, and before
each object and page a wait of up to %s for the server to answer no request), back to back, only during its own turns (held at its
next list request while another target takes its turn, that time left out of its duration). The
audit lists the same cluster page by page from a stand-in for the API server in that process
(JSON pages written in the process, decoded as the audit decodes the API server's; one pod per
tenant pulls from a registry its tenant does not allow, so each audit writes a report per
tenant, encoded and discarded).
Both tenantguards run with the soft memory limit %s and GC percent %s.
`, r.Scale.Tenants, r.Scale.Tenants*r.Scale.Namespaces, r.Scale.Tenants*r.Scale.Namespaces*r.Scale.Pods, 2*r.Scale.Tenants*r.Scale.Namespaces,
		r.Corpus, r.Rate, r.Duration, r.Rounds, TargetAudited, auditloop.DefaultPageSize, auditloop.DefaultBatch, auditloop.DefaultPause, shareText(r.Share), auditloop.DefaultQuietWait,
		memoryLimitText(r.MemoryLimit), gcPercentText(r.GCPercent))
	b.WriteString("\n")
	r.Write(&b)
	b.WriteString(auditEndMarker + "\n")
	return b.String()
}

// shareText is how long the audit pauses after a batch, in multiples of the
// batch's time.
func shareText(share float64) string {
	if share <= 0 || share > 1 {
		share = auditloop.DefaultShare
	}
	return strconv.FormatFloat(1/share-1, 'g', 3, 64) + "×"
}

// UpdateAuditBenchmarks replaces the generated section of `make
// bench-audit` in a BENCHMARKS.md, or inserts it after `make bench`'s
// section (before the first entry when there is none).
func UpdateAuditBenchmarks(file, section string) error {
	return replaceSection(file, auditBeginMarker, auditEndMarker, section, func(doc string) string {
		at := -1
		if bench := strings.Index(doc, endMarker); bench >= 0 {
			at = bench + len(endMarker)
		} else if first := strings.Index(doc, "\n## "); first >= 0 {
			at = first
		}
		if at < 0 {
			return doc + "\n" + section
		}
		return doc[:at] + "\n\n" + section + "\n" + strings.TrimLeft(doc[at:], "\n")
	})
}
