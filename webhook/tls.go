package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tenantguard/tenantguard/internal/metrics"
)

// certReloader serves the certificate in a cert/key file pair and reloads it
// when the files change; a pair that does not load is refused and the
// previous certificate kept.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger
	metrics           *metrics.Metrics

	mu              sync.RWMutex
	cert            *tls.Certificate
	certPEM, keyPEM []byte
}

func newCertReloader(certFile, keyFile string, log *slog.Logger, m *metrics.Metrics) (*certReloader, error) {
	c := &certReloader{certFile: certFile, keyFile: keyFile, log: log, metrics: m}
	if _, err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// reload loads the pair if either file changed; changed is false when both
// are as before.
func (c *certReloader) reload() (changed bool, err error) {
	certPEM, err := os.ReadFile(c.certFile)
	if err != nil {
		return false, fmt.Errorf("reading the TLS certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(c.keyFile)
	if err != nil {
		return false, fmt.Errorf("reading the TLS key: %w", err)
	}
	c.mu.RLock()
	same := bytes.Equal(certPEM, c.certPEM) && bytes.Equal(keyPEM, c.keyPEM)
	c.mu.RUnlock()
	if same {
		return false, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("loading the TLS key pair %s, %s: %w", c.certFile, c.keyFile, err)
	}
	c.mu.Lock()
	c.cert, c.certPEM, c.keyPEM = &cert, certPEM, keyPEM
	c.mu.Unlock()
	return true, nil
}

// watch polls the files until ctx ends. Secret volumes are updated by
// swapping a symlink, which file-event watchers miss; polling sees it.
func (c *certReloader) watch(ctx context.Context, interval time.Duration) {
	wait.UntilWithContext(ctx, func(context.Context) {
		changed, err := c.reload()
		switch {
		case err != nil:
			c.metrics.Rejected(metrics.SourceTLS, time.Now())
			c.log.Error("TLS certificate refused, keeping the previous one", "error", err.Error())
		case changed:
			c.metrics.Loaded(metrics.SourceTLS, 0)
			c.log.Info("TLS certificate reloaded", "cert", c.certFile)
		}
	}, interval)
}

func (c *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cert, nil
}
