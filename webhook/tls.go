package webhook

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/tenantguard/tenantguard/internal/metrics"
)

// fileCerts serves the certificate in a cert/key file pair through
// controller-runtime's certwatcher, which reloads it when fsnotify reports a
// change to either file and every 10 s. A pair that does not load is
// refused and the previous certificate kept.
type fileCerts struct {
	watcher  *certwatcher.CertWatcher
	certFile string
	log      *slog.Logger
	metrics  *metrics.Metrics
	// failing is whether the last check refused the pair; only check uses it.
	failing bool
}

func newFileCerts(certFile, keyFile string, log *slog.Logger, m *metrics.Metrics) (*fileCerts, error) {
	w, err := certwatcher.New(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the TLS key pair %s, %s: %w", certFile, keyFile, err)
	}
	c := &fileCerts{watcher: w, certFile: certFile, log: log, metrics: m}
	// The callback is called at once with the certificate just loaded, which
	// is no reload, then after each change, whoever read the files.
	var registered atomic.Bool
	w.RegisterCallback(func(tls.Certificate) {
		if registered.Load() {
			c.metrics.Loaded(metrics.SourceTLS, 0)
			c.log.Info("TLS certificate reloaded", "cert", c.certFile)
		}
	})
	registered.Store(true)
	return c, nil
}

// watch runs certwatcher until ctx ends and reads the pair every interval
// itself: certwatcher only logs a pair it refuses, and polling here turns
// that into the reload-failure metric (cleared when the pair loads again)
// and sees a change that file events miss, such as a Secret volume swapping
// a symlink, within the interval rather than certwatcher's 10 s.
func (c *fileCerts) watch(ctx context.Context, interval time.Duration) {
	go func() {
		if err := c.watcher.Start(ctx); err != nil {
			c.log.Error("TLS certificate files not watched for changes; polling them only", "error", err.Error())
		}
	}()
	wait.UntilWithContext(ctx, func(context.Context) { c.check() }, interval)
}

// check reads the pair; certwatcher keeps the previous certificate when it
// does not load.
func (c *fileCerts) check() {
	if err := c.watcher.ReadCertificate(); err != nil {
		c.failing = true
		c.metrics.Rejected(metrics.SourceTLS, time.Now())
		c.log.Error("TLS certificate refused, keeping the previous one", "error", fmt.Sprintf("loading the TLS key pair %s: %v", c.certFile, err))
		return
	}
	if c.failing {
		c.failing = false
		c.metrics.Recovered(metrics.SourceTLS)
	}
}

func (c *fileCerts) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.watcher.GetCertificate(hello)
}
