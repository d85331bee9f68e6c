package load

import (
	"context"
	"crypto/x509"
	"os"

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

// launch starts a build and warms it up.
func (f *fleet) launch(ctx context.Context, b Build) (*running, error) {
	s, err := startTarget(ctx, f.cfg, b, f.dir, f.certFile, f.keyFile, f.pool)
	if err != nil {
		return nil, err
	}
	f.served = append(f.served, s)
	return s, warm(ctx, f.cfg, s.target, f.corpus)
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
	err := finish(report, f.served)
	f.served = nil
	return err
}

// close stops the targets still running and removes the certificate.
func (f *fleet) close() {
	for _, s := range f.served {
		s.process.Stop()
	}
	f.served = nil
	_ = os.RemoveAll(f.dir)
}
