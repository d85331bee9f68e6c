package load

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/tenantguard/tenantguard/tests/scale"
	"github.com/tenantguard/tenantguard/webhook/selfsigned"
)

// Config is one side-by-side load comparison.
type Config struct {
	// OPA is the opa binary; empty leaves the classic OPA setup out.
	OPA string
	// Scale is the cluster every deciding target holds.
	Scale Scale
	// Corpus is the number of distinct requests sent in turn.
	Corpus int
	// Warmup runs before each target's figures, untimed.
	Warmup time.Duration
	// Saturate is the closed-loop run: Workers and Duration.
	Saturate Run
	// Rounds is how many turns the null webhook and tenantguard each take
	// at the saturated run, for Saturate.Duration/Rounds each, and at each
	// open-loop rate, for Step/Rounds each (Interleave), except at
	// LatencyRate when LatencyStep is set; 0 is 1.
	Rounds int
	// Rates are the open-loop rates, each run for Step with OpenWorkers
	// senders at most.
	Rates       []float64
	Step        time.Duration
	OpenWorkers int
	// LatencyStep and LatencyRounds, when LatencyStep is set, replace Step
	// and Rounds at LatencyRate, whose p99 the latency target compares: a
	// p99 is set by the slowest 1% of the requests, so over one short step
	// a single collection or stall of the machine in the wrong turn decides
	// it; over 60,000 requests in 30 turns it no longer does.
	LatencyStep   time.Duration
	LatencyRounds int
	// OPAGrowth are the smaller clusters, in tenants (each with
	// Scale.Namespaces and Scale.Pods), at which the classic OPA setup
	// also answers the requests that need a tenant-wide count: with the
	// full scale, the growth table of their cost.
	OPAGrowth []int
	// ProfileDir, when set, receives a CPU profile of each served target
	// (TARGET.pprof).
	ProfileDir string
	// MemoryLimit is tenantguard's soft memory limit, as serve
	// --memory-limit takes it ("" or "0": none).
	MemoryLimit string
	// GCPercent is tenantguard's garbage collector target, as serve
	// --gc-percent takes it; "" leaves serve's default.
	GCPercent string
	// Log receives progress lines.
	Log io.Writer
}

// TargetInfo is what a target's process cost.
type TargetInfo struct {
	// RSS after the saturated run, after all runs, and its peak, in MiB.
	SaturatedRSS float64 `json:"saturatedRssMiB"`
	RSS          float64 `json:"rssMiB"`
	PeakRSS      float64 `json:"peakRssMiB"`
	// Sync and Ready are tenantguard's startup (see Started).
	Sync  time.Duration `json:"sync,omitempty"`
	Ready time.Duration `json:"ready,omitempty"`
}

// LatencyRate is the open-loop rate, in requests/s, at which the latency
// target compares tenantguard's p99 with the null webhook's.
const LatencyRate = 2000

// The targets; every ratio is measured in one run.
const (
	TargetNull        = "null"
	TargetTenantguard = "tenantguard"
	TargetOPA         = "opa"
	// TargetOPAUncounted and TargetOPACounted are the classic OPA setup's
	// process again, sent only the requests of the corpus that need no
	// tenant-wide count, then only those that need one (scale.Split).
	TargetOPAUncounted = "opa, no count"
	TargetOPACounted   = "opa, counted"
)

// Bench starts the null webhook and tenantguard, warms each up, runs them
// saturated in turns (Interleave), then at each open-loop rate in turns
// too, and records their memory; then does the same for the classic OPA
// setup on its own, when it is configured, and runs it saturated again on
// the requests that need no tenant-wide count and on those that need one
// apart, then on the latter at each smaller cluster of OPAGrowth.
func Bench(ctx context.Context, cfg Config) (*Report, error) {
	f, err := newFleet(cfg)
	if err != nil {
		return nil, err
	}
	defer f.close()
	report := &Report{Scale: cfg.Scale, Corpus: cfg.Corpus, MemoryLimit: cfg.MemoryLimit, GCPercent: cfg.GCPercent, Rounds: max(cfg.Rounds, 1), Targets: map[string]TargetInfo{}}
	logResult := func(res Result) { _, _ = fmt.Fprintf(cfg.Log, "%s: %s\n", res.Target, res.Summary()) }
	for _, name := range []string{TargetNull, TargetTenantguard} {
		if _, err := f.launch(ctx, Build{Name: name, Target: name}); err != nil {
			return nil, err
		}
	}
	served, targets := f.served, f.targets()
	for i, res := range Interleave(ctx, targets, f.corpus, cfg.Saturate, report.Rounds) {
		served[i].info.SaturatedRSS, _, _ = served[i].process.Memory()
		logResult(res)
		served[i].results = append(served[i].results, res)
	}
	for _, rate := range cfg.Rates {
		run, rounds := turnsAt(cfg, rate)
		if rate == LatencyRate {
			report.LatencyStep, report.LatencyRounds = run.Duration, rounds
		}
		for i, res := range Interleave(ctx, targets, f.corpus, run, rounds) {
			logResult(res)
			served[i].results = append(served[i].results, res)
		}
	}
	switch err := f.finish(report); {
	case err != nil:
		return nil, err
	case cfg.OPA == "":
		return report, nil
	}
	s, err := f.launch(ctx, Build{Name: TargetOPA, Target: TargetOPA})
	if err != nil {
		return nil, err
	}
	s.results = loadTarget(ctx, cfg, s.target, f.corpus, func() { s.info.SaturatedRSS, _, _ = s.process.Memory() }, logResult)
	uncounted, counted := scale.Split(f.corpus)
	for _, part := range []struct {
		name   string
		corpus []scale.Request
	}{{TargetOPAUncounted, uncounted}, {TargetOPACounted, counted}} {
		t := *s.target
		t.Name = part.name
		res := Drive(ctx, &t, part.corpus, cfg.Saturate)
		logResult(res)
		s.results = append(s.results, res)
		if part.name == TargetOPACounted {
			report.OPAGrowth = append(report.OPAGrowth, Growth{Scale: cfg.Scale, Result: res})
		}
	}
	if err := f.finish(report); err != nil {
		return nil, err
	}
	for _, tenants := range cfg.OPAGrowth {
		g, err := f.growth(ctx, tenants)
		if err != nil {
			return nil, err
		}
		logResult(g.Result)
		report.OPAGrowth = append(report.OPAGrowth, g)
	}
	slices.SortFunc(report.OPAGrowth, func(a, b Growth) int { return cmp.Compare(a.Scale.Tenants, b.Scale.Tenants) })
	return report, nil
}

// Growth is the classic OPA setup answering only the requests that need a
// tenant-wide count, saturated, at one cluster size.
type Growth struct {
	Scale  Scale  `json:"scale"`
	Result Result `json:"result"`
	// PeakRSS is the OPA process's, in MiB; 0 at the full scale, whose
	// memory is the opa target's.
	PeakRSS float64 `json:"peakRssMiB,omitempty"`
}

// growth starts the classic OPA setup on a cluster of tenants tenants, each
// with the configured namespaces and pods, warms it up and runs it
// saturated on the counted requests of a corpus for that registry; it is
// stopped before growth returns, so that one OPA runs at a time.
func (f *fleet) growth(ctx context.Context, tenants int) (Growth, error) {
	cfg := f.cfg
	cfg.Scale.Tenants = tenants
	g := Growth{Scale: cfg.Scale}
	_, counted := scale.Split(scale.Corpus(tenants, cfg.Corpus))
	client := newClient(f.pool, cfg.Saturate.Workers)
	p, base, err := StartOPA(ctx, cfg.OPA, f.dir, f.certFile, f.keyFile, client, cfg.Scale)
	if err != nil {
		return g, err
	}
	defer p.Stop()
	t := &Target{Name: fmt.Sprintf("%s (%d namespaces)", TargetOPACounted, tenants*cfg.Scale.Namespaces), URL: base + OPAPath, Client: client, Decides: true, CPU: p.CPU}
	if w := Drive(ctx, t, counted, Run{Mode: Saturated, Workers: cfg.Saturate.Workers, Duration: cfg.Warmup}); w.Errors+w.Wrong > 0 {
		return g, fmt.Errorf("%s: %d errors and %d wrong answers while warming up; first: %s", t.Name, w.Errors, w.Wrong, w.FirstError)
	}
	g.Result = Drive(ctx, t, counted, cfg.Saturate)
	_, g.PeakRSS, err = p.Memory()
	return g, err
}

// openRun is the open-loop run at rate.
func openRun(cfg Config, rate float64) Run {
	return Run{Mode: OpenLoop, Rate: rate, Workers: cfg.OpenWorkers, Duration: cfg.Step}
}

// turnsAt is the open-loop run at rate that the null webhook and
// tenantguard take in turns, and how many turns each takes: LatencyStep in
// LatencyRounds at LatencyRate when LatencyStep is set, Step in Rounds
// otherwise.
func turnsAt(cfg Config, rate float64) (Run, int) {
	run := openRun(cfg, rate)
	if rate == LatencyRate && cfg.LatencyStep > 0 {
		run.Duration = cfg.LatencyStep
		return run, max(cfg.LatencyRounds, 1)
	}
	return run, max(cfg.Rounds, 1)
}

// loadTarget runs a warmed-up target saturated and then at every rate;
// afterSaturated runs once the saturated run is over, logResult after each.
func loadTarget(ctx context.Context, cfg Config, t *Target, corpus []scale.Request, afterSaturated func(), logResult func(Result)) []Result {
	runs := []Run{cfg.Saturate}
	for _, rate := range cfg.Rates {
		runs = append(runs, openRun(cfg, rate))
	}
	var out []Result
	for _, r := range runs {
		res := Drive(ctx, t, corpus, r)
		if r.Mode == Saturated {
			afterSaturated()
		}
		logResult(res)
		out = append(out, res)
	}
	return out
}

// servingCert writes a loopback serving certificate and its key into a new
// temporary directory, which the caller removes, and returns the pool that
// trusts it.
func servingCert(prefix string) (dir, certFile, keyFile string, pool *x509.CertPool, err error) {
	if dir, err = os.MkdirTemp("", prefix); err != nil {
		return "", "", "", nil, err
	}
	ca, err := selfsigned.NewCA("tgload")
	if err == nil {
		certFile, keyFile, err = ca.WriteServing(dir, "127.0.0.1")
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", "", "", nil, err
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	return dir, certFile, keyFile, pool, nil
}

// newClient is a keep-alive HTTPS client trusting the harness's CA.
func newClient(pool *x509.CertPool, conns int) *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     time.Minute,
		},
	}
}

// Summary is one line describing a result.
func (r Result) Summary() string {
	mode := fmt.Sprintf("%s ×%d", r.Mode, r.Workers)
	if r.Mode == OpenLoop {
		mode = fmt.Sprintf("%.0f/s", r.Rate)
	}
	s := fmt.Sprintf("%-16s %8.0f req/s  p50 %-9s p99 %-9s p99.9 %-9s CPU/req %s + harness %s (%d requests, %d errors, %d wrong)",
		mode, r.Throughput, r.Latency.P50, r.Latency.P99, r.Latency.P999, cpuText(r.TargetCPU), cpuText(r.HarnessCPU), r.Requests, r.Errors, r.Wrong)
	if r.Steal > 0 {
		s += fmt.Sprintf(", the host stole %s of CPU", r.Steal)
	}
	if r.Behind {
		s += fmt.Sprintf(" behind schedule (%d not sent)", r.Unsent)
	}
	if r.FirstError != "" {
		s += "; first error: " + r.FirstError
	}
	return s
}
