package load

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/tenantguard/tenantguard/internal/selfsigned"
	"github.com/tenantguard/tenantguard/tests/scale"
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
	// Rates are the open-loop rates, each run for Step with OpenWorkers
	// senders at most.
	Rates       []float64
	Step        time.Duration
	OpenWorkers int
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

// Targets in the order they run; every ratio is measured in one run.
const (
	TargetNull        = "null"
	TargetTenantguard = "tenantguard"
	TargetOPA         = "opa"
)

// Bench starts each target in turn, loads it saturated and then at each
// open-loop rate, and records its memory.
func Bench(ctx context.Context, cfg Config) (*Report, error) {
	dir, certFile, keyFile, pool, err := servingCert("tgload")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	corpus := scale.Corpus(cfg.Scale.Tenants, cfg.Corpus)
	report := &Report{Scale: cfg.Scale, Corpus: cfg.Corpus, MemoryLimit: cfg.MemoryLimit, GCPercent: cfg.GCPercent, Targets: map[string]TargetInfo{}}

	names := []string{TargetNull, TargetTenantguard}
	if cfg.OPA != "" {
		names = append(names, TargetOPA)
	}
	for _, name := range names {
		client := newClient(pool, max(cfg.OpenWorkers, cfg.Saturate.Workers))
		target := &Target{Name: name, Client: client, Decides: name != TargetNull}
		var p *Process
		var info TargetInfo
		_, _ = fmt.Fprintf(cfg.Log, "%s: starting\n", name)
		switch name {
		case TargetOPA:
			var base string
			p, base, err = StartOPA(ctx, cfg.OPA, dir, certFile, keyFile, client, cfg.Scale)
			target.URL = base + OPAPath
		default:
			var st Started
			profile := ""
			if cfg.ProfileDir != "" {
				profile = filepath.Join(cfg.ProfileDir, name+".pprof")
			}
			p, st, err = StartServed(ctx, name, certFile, keyFile, cfg.Scale, ServedOptions{CPUProfile: profile, MemoryLimit: cfg.MemoryLimit, GCPercent: cfg.GCPercent})
			if err == nil {
				target.URL = "https://" + st.Addr + "/validate?timeout=10s"
				info.Sync, info.Ready = st.Sync, st.Ready
			}
		}
		if err != nil {
			return nil, err
		}
		target.CPU = p.CPU
		results, err := loadTarget(ctx, cfg, target, corpus, func() { info.SaturatedRSS, _, _ = p.Memory() })
		if err == nil {
			info.RSS, info.PeakRSS, err = p.Memory()
		}
		p.Stop()
		if err != nil {
			return nil, err
		}
		report.Results = append(report.Results, results...)
		report.Targets[name] = info
	}
	return report, nil
}

// loadTarget warms a target up, then runs it saturated and at every rate;
// afterSaturated runs once the saturated run is over.
func loadTarget(ctx context.Context, cfg Config, t *Target, corpus []scale.Request, afterSaturated func()) ([]Result, error) {
	warm := Drive(ctx, t, corpus, Run{Mode: Saturated, Workers: cfg.Saturate.Workers, Duration: cfg.Warmup})
	if warm.Errors+warm.Wrong > 0 {
		return nil, fmt.Errorf("%s: %d errors and %d wrong answers while warming up; first: %s", t.Name, warm.Errors, warm.Wrong, warm.FirstError)
	}
	var out []Result
	runs := []Run{cfg.Saturate}
	for _, rate := range cfg.Rates {
		runs = append(runs, Run{Mode: OpenLoop, Rate: rate, Workers: cfg.OpenWorkers, Duration: cfg.Step})
	}
	for _, r := range runs {
		res := Drive(ctx, t, corpus, r)
		if r.Mode == Saturated {
			afterSaturated()
		}
		_, _ = fmt.Fprintf(cfg.Log, "%s: %s\n", t.Name, res.Summary())
		out = append(out, res)
	}
	return out, nil
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
	if r.Behind {
		s += fmt.Sprintf(" behind schedule (%d not sent)", r.Unsent)
	}
	if r.FirstError != "" {
		s += "; first error: " + r.FirstError
	}
	return s
}
