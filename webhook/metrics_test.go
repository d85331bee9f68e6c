package webhook

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/tests/fixtures"
)

// freeAddr is a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String()
}

// TestMetricsOnTheirOwnPort: with MetricsAddr, /metrics is plain HTTP there
// and gone from the HTTPS port.
func TestMetricsOnTheirOwnPort(t *testing.T) {
	ca, certFile, keyFile := certFiles(t, t.TempDir())
	addr, metricsAddr := freeAddr(t), freeAddr(t)
	srv, _ := newServer(t, newStore(t, filepath.Join(fixtures.Dir(), "registry.yaml"), nil),
		Options{Addr: addr, MetricsAddr: metricsAddr, CertFile: certFile, KeyFile: keyFile})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	var body string
	waitFor(t, "plain HTTP /metrics", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://%s/metrics", metricsAddr)) //nolint:noctx // a test's loopback call
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		raw, _ := io.ReadAll(resp.Body)
		body = string(raw)
		return resp.StatusCode == http.StatusOK
	})
	if !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics on the metrics port:\n%.300s", body)
	}
	waitFor(t, "the HTTPS port", func() bool {
		c := client(ca)
		c.Timeout = time.Second
		resp, err := c.Get("https://" + addr + "/healthz")
		if err == nil {
			_ = resp.Body.Close()
		}
		return err == nil
	})
	if status := get(t, client(ca), "https://"+addr+"/metrics"); status != http.StatusNotFound {
		t.Errorf("/metrics on the HTTPS port: %d, want 404", status)
	}
}
