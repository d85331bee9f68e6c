package load

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
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
)

// Bench starts the null webhook and tenantguard, warms each up, runs them
// saturated in turns (Interleave), then at each open-loop rate in turns
// too, and records their memory; then does the same for the classic OPA
// setup on its own, when it is configured.
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
	if err := f.finish(report); err != nil {
		return nil, err
	}
	return report, nil
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
