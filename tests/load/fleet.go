package load

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tenantguard/tenantguard/tests/scale"
)

// fleet is the targets of one run, started and warmed up in turn: the
// serving certificate they share, the corpus they are sent, and their
// processes until they are stopped.
type fleet struct {
	cfg                    Config
	dir, certFile, keyFile string
	pool                   *x509.CertPool
	corpus                 []scale.Request
	// served are the targets running; close stops them.
	served []*running
}

// newFleet writes the serving certificate and builds the corpus; close
// removes the certificate.
func newFleet(cfg Config) (*fleet, error) {
	dir, certFile, keyFile, pool, err := servingCert("tgload")
	if err != nil {
		return nil, err
	}
	return &fleet{cfg: cfg, dir: dir, certFile: certFile, keyFile: keyFile, pool: pool, corpus: scale.Corpus(cfg.Scale.Tenants, cfg.Corpus)}, nil
}

// running is a target's process, started, what it cost, and its results.
type running struct {
	target  *Target
	process *Process
	info    TargetInfo
	results []Result
}

// launch starts a build and warms it up.
func (f *fleet) launch(ctx context.Context, b Build) (*running, error) {
	s, err := f.start(ctx, b)
	if err != nil {
		return nil, err
	}
	f.served = append(f.served, s)
	if b.Target == TargetTenantguard {
		if err := decideEveryNamespace(ctx, s.target, f.cfg.Scale, f.cfg.Saturate.Workers); err != nil {
			return s, err
		}
	}
	return s, f.warm(ctx, s.target)
}

// start starts one target's process: the classic OPA setup, or a tgload
// binary (this harness's unless b says) serving the null webhook or
// tenantguard.
func (f *fleet) start(ctx context.Context, b Build) (*running, error) {
	cfg := f.cfg
	client := newClient(f.pool, max(cfg.OpenWorkers, cfg.Saturate.Workers))
	s := &running{target: &Target{Name: b.Name, Client: client, Decides: b.Target != TargetNull}}
	_, _ = fmt.Fprintf(cfg.Log, "%s: starting\n", b.Name)
	var err error
	if b.Target == TargetOPA {
		var base string
		s.process, base, err = StartOPA(ctx, cfg.OPA, f.dir, f.certFile, f.keyFile, client, cfg.Scale)
		s.target.URL = base + OPAPath
	} else {
		profile := ""
		if cfg.ProfileDir != "" {
			profile = filepath.Join(cfg.ProfileDir, b.Name+".pprof")
		}
		var st Started
		s.process, st, err = StartServed(ctx, b.Target, f.certFile, f.keyFile, cfg.Scale, ServedOptions{Executable: b.Executable, CPUProfile: profile, MemoryLimit: cfg.MemoryLimit, GCPercent: cfg.GCPercent, Audit: b.Audit, AuditShare: b.AuditShare})
		if err == nil {
			s.target.URL = "https://" + st.Addr + "/validate?timeout=10s"
			s.info.Sync, s.info.Ready = st.Sync, st.Ready
		}
	}
	if err != nil {
		return nil, err
	}
	s.target.CPU = s.process.CPU
	return s, nil
}

// warm runs a target saturated for the warm-up, untimed, and fails on an
// error or a wrong answer.
func (f *fleet) warm(ctx context.Context, t *Target) error {
	w := Drive(ctx, t, f.corpus, Run{Mode: Saturated, Workers: f.cfg.Saturate.Workers, Duration: f.cfg.Warmup})
	if w.Errors+w.Wrong > 0 {
		return fmt.Errorf("%s: %d errors and %d wrong answers while warming up; first: %s", t.Name, w.Errors, w.Wrong, w.FirstError)
	}
	return nil
}

// decideEveryNamespace has a tenantguard decide once in every namespace of
// the scale cluster (scale.EveryNamespace), untimed, and fails on an error
// or a wrong answer: what it keeps per namespace decided in is then in the
// figures, as in a server that has served a while, and not only for the
// corpus's namespace of each tenant.
func decideEveryNamespace(ctx context.Context, t *Target, s Scale, workers int) error {
	every := scale.EveryNamespace(s.Tenants, s.Namespaces)
	w := Drive(ctx, t, every, Run{Mode: Saturated, Workers: workers, Duration: 10 * time.Minute, MaxRequests: len(every)})
	if w.Errors+w.Wrong > 0 || w.Requests < int64(len(every)) {
		return fmt.Errorf("%s: %d errors and %d wrong answers in %d of %d namespaces while deciding once in each; first: %s", t.Name, w.Errors, w.Wrong, w.Requests, len(every), w.FirstError)
	}
	return nil
}

// targets are the running targets, in launch order.
func (f *fleet) targets() []*Target {
	out := make([]*Target, len(f.served))
	for i, s := range f.served {
		out[i] = s.target
	}
	return out
}

// finish records the memory of the running targets, stops them, and adds
// their results to report.
func (f *fleet) finish(report *Report) error {
	var errs []error
	for _, s := range f.served {
		var err error
		s.info.RSS, s.info.PeakRSS, err = s.process.Memory()
		s.process.Stop()
		errs = append(errs, err)
		report.Results = append(report.Results, s.results...)
		report.Targets[s.target.Name] = s.info
	}
	f.served = nil
	return errors.Join(errs...)
}

// close stops the targets still running and removes the certificate.
func (f *fleet) close() {
	for _, s := range f.served {
		s.process.Stop()
	}
	f.served = nil
	_ = os.RemoveAll(f.dir)
}
