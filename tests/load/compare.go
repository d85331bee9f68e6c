package load

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Build is one served target of a comparison: its name in the figures,
// what it serves (TargetNull or TargetTenantguard), and the tgload binary
// that serves it, "" for this one. A tgload built from another commit
// serves that commit's tenantguard.
type Build struct {
	Name       string
	Target     string
	Executable string
	// Audit has a served tenantguard audit in the background (AuditLoad),
	// taking AuditShare of the time it runs (0: the loop's default).
	Audit      bool
	AuditShare float64
}

// Comparison is what Compare measured: each build's run, and its ratios to
// the first build's.
type Comparison struct {
	Results []Result
	// Throughput, ServerCPU and TotalCPU (server and harness) per request
	// are each build's over the first build's; 0 when a CPU time is unknown.
	Throughput, ServerCPU, TotalCPU []float64
	// P99 is each build's 99th percentile latency over the first build's.
	P99 []float64
}

// Compare starts every build, warms each up, and runs cfg.Saturate against
// them in turns (Interleave: cfg.Rounds turns each, the order reversed every
// other round), so that the machine's drift weighs on all of them alike: two
// builds' figures taken minutes apart differ by more than most changes do.
// cfg.Saturate is a saturated run, or an open-loop one to compare latency
// at a rate. Of cfg it reads Scale, Corpus, Warmup, Saturate, Rounds,
// OpenWorkers (with Saturate.Workers, the connections kept), MemoryLimit,
// GCPercent and Log. The builds are checked before any starts. A build
// that gave errors or wrong answers fails the comparison, whose figures
// are returned with the error.
func Compare(ctx context.Context, cfg Config, builds []Build) (*Comparison, error) {
	builds = slices.Clone(builds)
	if err := checkBuilds(builds); err != nil {
		return nil, err
	}
	f, err := newFleet(cfg)
	if err != nil {
		return nil, err
	}
	defer f.close()
	for _, b := range builds {
		if _, err := f.launch(ctx, b); err != nil {
			return nil, err
		}
	}
	c := &Comparison{Results: Interleave(ctx, f.targets(), f.corpus, cfg.Saturate, cfg.Rounds)}
	if err := ctx.Err(); err != nil {
		return nil, err // turns were skipped: no figures to compare
	}
	first := c.Results[0]
	var errs []error
	for _, r := range c.Results {
		c.Throughput = append(c.Throughput, ratio(r.Throughput, first.Throughput))
		c.ServerCPU = append(c.ServerCPU, ratio(float64(r.TargetCPU), float64(first.TargetCPU)))
		c.TotalCPU = append(c.TotalCPU, ratio(float64(r.TargetCPU+r.HarnessCPU), float64(first.TargetCPU+first.HarnessCPU)))
		c.P99 = append(c.P99, ratio(float64(r.Latency.P99), float64(first.Latency.P99)))
		if r.Errors+r.Wrong > 0 {
			errs = append(errs, fmt.Errorf("%s: %d errors and %d wrong answers; first: %s", r.Target, r.Errors, r.Wrong, r.FirstError))
		}
	}
	return c, errors.Join(errs...)
}

// checkBuilds refuses a comparison of no build, of two builds of one name,
// of a target Compare does not serve, or of a tgload binary that is not a
// file; a binary's path is made absolute.
func checkBuilds(builds []Build) error {
	if len(builds) == 0 {
		return errors.New("no build to compare")
	}
	names := map[string]bool{}
	for i, b := range builds {
		switch {
		case names[b.Name]:
			return fmt.Errorf("two builds are named %q", b.Name)
		case b.Target != TargetNull && b.Target != TargetTenantguard:
			return fmt.Errorf("build %q serves %q: compare serves %s or %s", b.Name, b.Target, TargetNull, TargetTenantguard)
		}
		names[b.Name] = true
		if b.Executable == "" {
			continue
		}
		exe, err := filepath.Abs(b.Executable)
		if err == nil {
			_, err = os.Stat(exe)
		}
		if err != nil {
			return fmt.Errorf("build %q: %w", b.Name, err)
		}
		builds[i].Executable = exe
	}
	return nil
}

// ratio is a/b, 0 when either is unknown.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}
