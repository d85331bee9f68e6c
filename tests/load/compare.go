package load

import (
	"context"
	"fmt"
	"os"

	"github.com/tenantguard/tenantguard/tests/scale"
)

// Build is one served target of a comparison: its name in the figures,
// what it serves (TargetNull or TargetTenantguard), and the tgload binary
// that serves it, "" for this one. A tgload built from another commit
// serves that commit's tenantguard.
type Build struct {
	Name       string
	Target     string
	Executable string
}

// Comparison is what Compare measured: each build's saturated run, and its
// ratios to the first build's.
type Comparison struct {
	Results []Result
	// Throughput, ServerCPU and TotalCPU (server and harness) per request
	// are each build's over the first build's; 0 when a CPU time is unknown.
	Throughput, ServerCPU, TotalCPU []float64
}

// Compare starts every build, warms each up, and runs them saturated in
// turns (Interleave: cfg.Rounds turns each, the order reversed every other
// round), so that the machine's drift weighs on all of them alike: two
// builds' figures taken minutes apart differ by more than most changes do.
// Of cfg it reads Scale, Corpus, Warmup, Saturate, Rounds, MemoryLimit,
// GCPercent and Log.
func Compare(ctx context.Context, cfg Config, builds []Build) (*Comparison, error) {
	if len(builds) == 0 {
		return nil, fmt.Errorf("no build to compare")
	}
	for _, b := range builds {
		if b.Target != TargetNull && b.Target != TargetTenantguard {
			return nil, fmt.Errorf("build %q serves %q: compare serves %s or %s", b.Name, b.Target, TargetNull, TargetTenantguard)
		}
	}
	dir, certFile, keyFile, pool, err := servingCert("tgload")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	corpus := scale.Corpus(cfg.Scale.Tenants, cfg.Corpus)
	var served []*running
	defer func() {
		for _, s := range served {
			s.process.Stop()
		}
	}()
	targets := make([]*Target, len(builds))
	for i, b := range builds {
		s, err := startTarget(ctx, cfg, b, dir, certFile, keyFile, pool)
		if err != nil {
			return nil, err
		}
		served = append(served, s)
		if err := warm(ctx, cfg, s.target, corpus); err != nil {
			return nil, err
		}
		targets[i] = s.target
	}
	c := &Comparison{Results: Interleave(ctx, targets, corpus, cfg.Saturate, cfg.Rounds)}
	first := c.Results[0]
	for _, r := range c.Results {
		c.Throughput = append(c.Throughput, ratio(r.Throughput, first.Throughput))
		c.ServerCPU = append(c.ServerCPU, ratio(float64(r.TargetCPU), float64(first.TargetCPU)))
		c.TotalCPU = append(c.TotalCPU, ratio(float64(r.TargetCPU+r.HarnessCPU), float64(first.TargetCPU+first.HarnessCPU)))
	}
	return c, nil
}

// ratio is a/b, 0 when either is unknown.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}
