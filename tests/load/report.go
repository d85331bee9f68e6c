package load

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tenantguard/tenantguard/internal/memlimit"
)

// Report is everything one `make bench` measured.
type Report struct {
	Date    string `json:"date"`
	Machine string `json:"machine"`
	// Versions of Go, OPA and what else the figures depend on.
	Versions string `json:"versions"`
	Command  string `json:"command"`
	Scale    Scale  `json:"scale"`
	Corpus   int    `json:"corpus"`
	// MemoryLimit is tenantguard's soft memory limit (serve --memory-limit).
	MemoryLimit string `json:"memoryLimit"`
	// GCPercent is tenantguard's collector target (serve --gc-percent); ""
	// is serve's default.
	GCPercent string `json:"gcPercent,omitempty"`
	// Rounds is how many turns the null webhook and tenantguard each took
	// at the saturated run (Interleave).
	Rounds int `json:"rounds"`
	// LatencyStep and LatencyRounds are the length of the run at
	// LatencyRate and its turns, when it was run.
	LatencyStep   time.Duration `json:"latencyStep,omitempty"`
	LatencyRounds int           `json:"latencyRounds,omitempty"`
	// Results of every run, target by target.
	Results []Result              `json:"results"`
	Targets map[string]TargetInfo `json:"targets"`
	// Micro are the Go benchmarks' medians.
	Micro []Micro `json:"micro"`
	// OPAGrowth is the classic OPA setup on the requests that need a
	// tenant-wide count, at each cluster size, the smallest first.
	OPAGrowth []Growth `json:"opaGrowth,omitempty"`
}

// Check is one target of the performance issue and the figure measured
// against it.
type Check struct {
	Target   string
	Measured string
	Met      bool
	// Missing is set when the figure was not measured in this run.
	Missing bool
}

// result finds a target's run.
func (r *Report) result(target string, mode Mode, rate float64) (Result, bool) {
	for _, res := range r.Results {
		if res.Target == target && res.Mode == mode && (mode == Saturated || res.Rate == rate) {
			return res, true
		}
	}
	return Result{}, false
}

// Checks compares the figures with the targets.
func (r *Report) Checks() []Check {
	var out []Check
	add := func(target string, ok bool, met bool, format string, args ...any) {
		c := Check{Target: target, Missing: !ok, Met: ok && met}
		if ok {
			c.Measured = fmt.Sprintf(format, args...)
		}
		out = append(out, c)
	}
	null, okNull := r.result(TargetNull, Saturated, 0)
	tg, okTG := r.result(TargetTenantguard, Saturated, 0)
	opa, okOPA := r.result(TargetOPA, Saturated, 0)
	ratio := safeRatio(tg.Throughput, null.Throughput)
	add("webhook throughput ≥ 50% of the null webhook's (saturated)", okNull && okTG, ratio >= 0.5,
		"%.0f of %.0f req/s: %.0f%%", tg.Throughput, null.Throughput, 100*ratio)
	nullOpen, okNullOpen := r.result(TargetNull, OpenLoop, LatencyRate)
	tgOpen, okTGOpen := r.result(TargetTenantguard, OpenLoop, LatencyRate)
	ratio = safeRatio(float64(tgOpen.Latency.P99), float64(nullOpen.Latency.P99))
	add("p99 at 2,000 req/s open-loop ≤ 1.5× the null webhook's", okNullOpen && okTGOpen, ratio <= 1.5 && !tgOpen.Behind,
		"%s vs %s: %.2f×", round(tgOpen.Latency.P99), round(nullOpen.Latency.P99), ratio)
	small, ok10 := metric(r.Micro, "BenchmarkReview/tenants=10", "ns/op")
	large, ok10k := metric(r.Micro, "BenchmarkReview/tenants=10000", "ns/op")
	ratio = safeRatio(large, small)
	add("decision at 10,000 tenants ≤ 1.2× that at 10", ok10 && ok10k, ratio <= 1.2,
		"%s vs %s: %.2f×", micros(large), micros(small), ratio)
	info, okInfo := r.Targets[TargetTenantguard]
	add("RSS ≤ 150 MiB with the scale view", okInfo, info.PeakRSS <= 150,
		"%.0f MiB peak over every run (%.0f MiB after the saturated run)", info.PeakRSS, info.SaturatedRSS)
	add("ready ≤ 2 s after the view is synced", okInfo, info.Ready <= 2*time.Second,
		"%s (view filled in %s)", round(info.Ready), round(info.Sync))
	ratio = safeRatio(tg.Throughput, opa.Throughput)
	add("≥ 3× the throughput of `opa run --server` (saturated)", okTG && okOPA, ratio >= 3,
		"%.0f vs %.0f req/s: %.1f×", tg.Throughput, opa.Throughput, ratio)
	uncounted, okUncounted := r.result(TargetOPAUncounted, Saturated, 0)
	add("`opa run --server` with the bundle ≥ 1,000 req/s on the requests that need no tenant-wide count (saturated, the scale cluster)", okUncounted, uncounted.Throughput >= 1000,
		"%.0f req/s, OPA CPU/req %s (Deployments and Services)", uncounted.Throughput, cpuText(uncounted.TargetCPU))
	gkText, gkOK, gkMet := r.gatekeeperCheck()
	add("≥ 5× faster per decision than Gatekeeper's engine (its constraint framework with the exported templates, in-process; the same mixed corpus from the AdmissionReview's JSON, decoding counted on both sides; at 10 and 1,000 tenants)",
		gkOK, gkMet, "%s", gkText)
	return out
}

// GatekeeperTenants are the registry sizes at which
// BenchmarkDecisionSideBySide compares tenantguard's embedded engine with
// Gatekeeper's (sub-benchmarks tenants=N/engine=embedded|gatekeeper).
var GatekeeperTenants = []int{10, 1000}

// gatekeeperCheck compares the decisions of BenchmarkDecisionSideBySide at
// every size: measured when every size was, met when tenantguard is 5×
// faster at each.
func (r *Report) gatekeeperCheck() (text string, ok, met bool) {
	ok, met = true, true
	var parts []string
	for _, n := range GatekeeperTenants {
		embedded, okE := metric(r.Micro, fmt.Sprintf("BenchmarkDecisionSideBySide/tenants=%d/engine=embedded", n), "ns/op")
		gk, okG := metric(r.Micro, fmt.Sprintf("BenchmarkDecisionSideBySide/tenants=%d/engine=gatekeeper", n), "ns/op")
		if !okE || !okG {
			return "", false, false
		}
		ratio := safeRatio(gk, embedded)
		met = met && ratio >= 5
		parts = append(parts, fmt.Sprintf("%s tenants: %s vs %s: %.1f×", thousands(n), micros(embedded), micros(gk), ratio))
	}
	return strings.Join(parts, "; "), ok, met
}

// thousands writes n with a comma between thousands, as the tables do.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func safeRatio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// round shortens a duration for tables.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d // an allocation-free encoding takes tens of nanoseconds
}

// micros formats nanoseconds as a rounded duration.
func micros(ns float64) time.Duration { return round(time.Duration(ns)) }

// WriteSummary writes the targets table: the one table `make bench` prints.
func (r *Report) WriteSummary(w io.Writer) {
	_, _ = fmt.Fprintln(w, "| target | measured | met |")
	_, _ = fmt.Fprintln(w, "| --- | --- | --- |")
	for _, c := range r.Checks() {
		met := "no"
		switch {
		case c.Missing:
			c.Measured, met = "not measured in this run", "—"
		case c.Met:
			met = "yes"
		}
		_, _ = fmt.Fprintf(w, "| %s | %s | %s |\n", c.Target, c.Measured, met)
	}
}

// WriteRuns writes every load run as a table.
func (r *Report) WriteRuns(w io.Writer) {
	_, _ = fmt.Fprintln(w, "| target | load | requests | errors | wrong | req/s | p50 | p90 | p99 | p99.9 | max | target CPU/req | harness CPU/req |")
	_, _ = fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, res := range r.Results {
		load := fmt.Sprintf("saturated, %d workers", res.Workers)
		if res.Mode == OpenLoop {
			load = fmt.Sprintf("open-loop %.0f/s", res.Rate)
			if res.Behind {
				load += " (behind)"
			}
		}
		l := res.Latency
		_, _ = fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %.0f | %s | %s | %s | %s | %s | %s | %s |\n", res.Target, load, res.Requests, res.Errors, res.Wrong,
			res.Throughput, round(l.P50), round(l.P90), round(l.P99), round(l.P999), round(l.Max), cpuText(res.TargetCPU), cpuText(res.HarnessCPU))
	}
}

// WriteGrowth writes the growth table of the classic OPA setup's counted
// requests: every one reads every namespace's labels (kube-mgmt keeps
// namespaces by name only), so that their cost grows with the cluster.
func (r *Report) WriteGrowth(w io.Writer) {
	_, _ = fmt.Fprintln(w, "Pod, claim and namespace creates only (tenant-quota and namespace-quota count), saturated; memory is the OPA process's peak RSS.")
	_, _ = fmt.Fprintln(w)
	_, _ = fmt.Fprintln(w, "| namespaces | pods | requests | req/s | p50 | p99 | OPA CPU/req | peak RSS |")
	_, _ = fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, g := range r.OPAGrowth {
		rss := g.PeakRSS
		if rss == 0 && g.Scale == r.Scale {
			rss = r.Targets[TargetOPA].PeakRSS
		}
		res := g.Result
		_, _ = fmt.Fprintf(w, "| %d | %d | %d | %.0f | %s | %s | %s | %.0f MiB |\n", g.Scale.Tenants*g.Scale.Namespaces, g.Scale.Tenants*g.Scale.Namespaces*g.Scale.Pods,
			res.Requests, res.Throughput, round(res.Latency.P50), round(res.Latency.P99), cpuText(res.TargetCPU), rss)
	}
}

// WriteMicro writes the Go benchmarks' medians.
func (r *Report) WriteMicro(w io.Writer) {
	_, _ = fmt.Fprintln(w, "| benchmark | runs | time/op | B/op | allocs/op |")
	_, _ = fmt.Fprintln(w, "| --- | --- | --- | --- | --- |")
	for _, m := range r.Micro {
		_, _ = fmt.Fprintf(w, "| `%s` | %d | %s | %.0f | %.0f |\n", m.Name, m.Runs, micros(m.Metrics["ns/op"]), m.Metrics["B/op"], m.Metrics["allocs/op"])
	}
}

// Markers delimit the section of BENCHMARKS.md that `make bench` rewrites.
const (
	beginMarker = "<!-- make bench: begin (generated, do not edit) -->"
	endMarker   = "<!-- make bench: end -->"
)

// opaText says when the classic OPA setup ran, if it did.
func opaText(targets map[string]TargetInfo) string {
	if _, ok := targets[TargetOPA]; !ok {
		return ""
	}
	return "; the classic OPA setup (`opa run --server " + strings.Join(OPAServerFlags, " ") + "` with the exported bundle) runs after them, " +
		"then again on the corpus's requests that need no tenant-wide count (`" + TargetOPAUncounted + "`) and on those that need one (`" + TargetOPACounted + "`) apart"
}

// roundsText says how the saturated run was shared out.
func roundsText(rounds int) string {
	if rounds <= 1 {
		return "one turn each"
	}
	return fmt.Sprintf("%d turns each, the order reversed every other turn, so that the machine's drift weighs on both alike", rounds)
}

// latencyStepText says how long the run at LatencyRate lasted, when it was
// run.
func latencyStepText(step time.Duration, rounds int) string {
	if step <= 0 {
		return ""
	}
	return fmt.Sprintf(" (at %d/s, whose p99 the latency target compares, %s s in %d turns each)", LatencyRate, strconv.FormatFloat(step.Seconds(), 'f', -1, 64), rounds)
}

// Markdown is the generated section of BENCHMARKS.md.
func (r *Report) Markdown(plot string) string {
	var b bytes.Buffer
	_, _ = fmt.Fprintf(&b, "%s\n## `make bench`, %s\n\n", beginMarker, r.Date)
	_, _ = fmt.Fprintf(&b, "Command: `%s`. Machine: %s. Versions: %s.\n\n", r.Command, r.Machine, r.Versions)
	_, _ = fmt.Fprintf(&b, "Load: HTTPS with keep-alive on loopback, the load generator on the same cores as the target; "+
		"each target in its own process, all in one run. The null webhook and tenantguard run saturated in turns, "+
		"%s, then at each open-loop rate, in turns the same way%s%s. Mixed corpus of %d validating "+
		"AdmissionReviews (pods, Deployments, claims, Services, namespace creates and host-path pods; "+
		"a fifth of them refused), every answer checked; before its warm-up tenantguard decides once "+
		"in each namespace (the corpus's requests go to one namespace per tenant). Cluster: %d tenants, %d namespaces, %d pods, "+
		"in tenantguard's view and in OPA's data.kubernetes. tenantguard's soft memory limit "+
		"(`serve --memory-limit`): %s; its garbage collector target (`serve --gc-percent`): %s.\n\n",
		roundsText(r.Rounds), latencyStepText(r.LatencyStep, r.LatencyRounds), opaText(r.Targets), r.Corpus, r.Scale.Tenants, r.Scale.Tenants*r.Scale.Namespaces, r.Scale.Tenants*r.Scale.Namespaces*r.Scale.Pods, memoryLimitText(r.MemoryLimit), gcPercentText(r.GCPercent))
	b.WriteString("### Targets\n\n")
	r.WriteSummary(&b)
	b.WriteString("\n### Load runs\n\n")
	r.WriteRuns(&b)
	if plot != "" {
		_, _ = fmt.Fprintf(&b, "\n![latency percentiles against the offered rate](%s)\n", plot)
	}
	b.WriteString("\n### Memory\n\n| target | RSS after the saturated run | after every run | peak |\n| --- | --- | --- | --- |\n")
	for _, name := range []string{TargetNull, TargetTenantguard, TargetOPA} {
		if info, ok := r.Targets[name]; ok {
			_, _ = fmt.Fprintf(&b, "| %s | %.0f MiB | %.0f MiB | %.0f MiB |\n", name, info.SaturatedRSS, info.RSS, info.PeakRSS)
		}
	}
	if len(r.OPAGrowth) > 0 {
		b.WriteString("\n### `opa run --server`: the requests that need a tenant-wide count, by cluster size\n\n")
		r.WriteGrowth(&b)
	}
	if len(r.EndToEnd()) > 0 {
		b.WriteString("\n### End to end on the real API server: what a tenant's `kubectl create` waits for\n\n")
		r.WriteEndToEnd(&b)
	}
	if len(r.Micro) > 0 {
		b.WriteString("\n### Go benchmarks (medians)\n\n")
		r.WriteMicro(&b)
	}
	b.WriteString(endMarker + "\n")
	return b.String()
}

// UpdateBenchmarks replaces the generated section of a BENCHMARKS.md, or
// inserts it before the first entry.
func UpdateBenchmarks(file, section string) error {
	return replaceSection(file, beginMarker, endMarker, section, func(doc string) string {
		at := strings.Index(doc, "\n## ")
		if at < 0 {
			at = len(doc) - 1
		}
		return doc[:at+1] + section + "\n" + doc[at+1:]
	})
}

// replaceSection replaces, in file, the text from the begin marker to the
// end marker (and the line break after it) with section; when neither
// marker is there, insert gives the document with the section added.
func replaceSection(file, begin, end, section string, insert func(doc string) string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	doc := string(data)
	b, e := strings.Index(doc, begin), strings.Index(doc, end)
	switch {
	case b >= 0 && e > b:
		doc = doc[:b] + section + strings.TrimPrefix(doc[e+len(end):], "\n")
	case b >= 0 || e >= 0:
		return errors.New(file + ": one of the generated section's markers is missing")
	default:
		doc = insert(doc)
	}
	return os.WriteFile(file, []byte(doc), 0o644) //nolint:gosec // a document of the repository
}

// cpuText is a CPU time per request, or "—" when not measured.
func cpuText(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	return d.Round(100 * time.Nanosecond).String()
}

// gcPercentText names a GC percent setting for the report.
func gcPercentText(percent string) string {
	if percent == "" {
		return fmt.Sprintf("%d, serve's default", memlimit.DefaultGCPercent)
	}
	return percent
}

// memoryLimitText names a memory limit setting for the report.
func memoryLimitText(limit string) string {
	if limit == "" || limit == "0" {
		return "none"
	}
	return limit
}
