package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/webhook/selfsigned"
)

// tlsServer serves srv on a loopback listener until the test ends; it
// returns the address and a channel with Serve's result.
func tlsServer(t testing.TB, srv *Server, ctx context.Context) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	return ln.Addr().String(), done
}

// certFiles writes a serving certificate for 127.0.0.1 into dir.
func certFiles(t testing.TB, dir string) (ca *selfsigned.CA, certFile, keyFile string) {
	t.Helper()
	ca, err := selfsigned.NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err = ca.WriteServing(dir, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return ca, certFile, keyFile
}

func client(ca *selfsigned.CA) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

func get(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func TestReadiness(t *testing.T) {
	registryFile := filepath.Join(fixtures.Dir(), "registry.yaml")
	tests := []struct {
		name   string
		opts   func(t *testing.T) Options
		loaded bool
		status int
		body   string
	}{
		{"not ready before a registry is loaded", func(*testing.T) Options { return Options{} }, false, 503, "no tenant registry loaded yet"},
		{"not ready while the view syncs", func(*testing.T) Options {
			return Options{Synced: func() error { return errors.New("the cluster view is not synced yet") }}
		}, true, 503, "not synced"},
		{"ready once loaded and synced", func(*testing.T) Options { return Options{Synced: func() error { return nil }} }, true, 200, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := ""
			if tt.loaded {
				file = registryFile
			}
			srv, _ := newServer(t, newStore(t, file, nil), tt.opts(t))
			status, body := post(t, http.HandlerFunc(srv.readyz), "/readyz", "", nil)
			if status != tt.status || !strings.Contains(string(body), tt.body) {
				t.Errorf("readyz %d %q, want %d containing %q", status, body, tt.status, tt.body)
			}
		})
	}
}

func TestServingCertificateIsReloaded(t *testing.T) {
	dir := t.TempDir()
	caA, certFile, keyFile := certFiles(t, dir)
	srv, m := newServer(t, newStore(t, filepath.Join(fixtures.Dir(), "registry.yaml"), nil),
		Options{CertFile: certFile, KeyFile: keyFile, CertPollInterval: 10 * time.Millisecond})
	addr, _ := tlsServer(t, srv, t.Context())
	url := "https://" + addr + "/healthz"
	if status := get(t, client(caA), url); status != http.StatusOK {
		t.Fatalf("healthz %d with the first certificate", status)
	}

	caB, err := selfsigned.NewCA("rotated")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := caB.WriteServing(dir, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rotated certificate", func() bool {
		resp, err := client(caB).Get(url)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err == nil
	})

	rotated, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the broken certificate refused", func() bool {
		return counter(t, m, "tenantguard_reload_last_failed", map[string]string{"source": "tls"}) == 1
	})
	if status := get(t, client(caB), url); status != http.StatusOK {
		t.Fatalf("healthz %d after a broken certificate; the rotated one should stay", status)
	}

	// Reverting the broken edit clears the failure.
	if err := os.WriteFile(certFile, rotated, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the failure cleared", func() bool {
		return counter(t, m, "tenantguard_reload_last_failed", map[string]string{"source": "tls"}) == 0
	})
}

// TestServingCertificateIsReloadedOnAFileEvent polls once an hour: the
// rotated certificate can only come from the file events certwatcher
// watches (or its own poll, every 10 s, longer than the wait).
func TestServingCertificateIsReloadedOnAFileEvent(t *testing.T) {
	dir := t.TempDir()
	_, certFile, keyFile := certFiles(t, dir)
	srv, m := newServer(t, newStore(t, filepath.Join(fixtures.Dir(), "registry.yaml"), nil),
		Options{CertFile: certFile, KeyFile: keyFile, CertPollInterval: time.Hour})
	success := map[string]string{"source": "tls", "result": "success"}
	if n := counter(t, m, "tenantguard_reloads_total", success); n != 0 {
		t.Fatalf("the first certificate counted as a reload: %v", n)
	}
	addr, _ := tlsServer(t, srv, t.Context())
	caB, err := selfsigned.NewCA("rotated")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := caB.Serving("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rotated certificate", func() bool {
		resp, err := client(caB).Get("https://" + addr + "/healthz")
		if err == nil {
			_ = resp.Body.Close()
			return true
		}
		// Written until served: the files are watched shortly after Serve starts.
		if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		return false
	})
	// certwatcher calls back after it serves the new certificate.
	waitFor(t, "the reload counted", func() bool { return counter(t, m, "tenantguard_reloads_total", success) == 1 })
}

func TestTLSBelow12IsRefused(t *testing.T) {
	_, certFile, keyFile := certFiles(t, t.TempDir())
	srv, _ := newServer(t, newStore(t, "", nil), Options{CertFile: certFile, KeyFile: keyFile})
	addr, _ := tlsServer(t, srv, t.Context())
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11})
	if err == nil {
		_ = conn.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}
}

func TestShutdownDrainsInFlightRequests(t *testing.T) {
	ca, certFile, keyFile := certFiles(t, t.TempDir())
	srv, _ := newServer(t, newStore(t, filepath.Join(fixtures.Dir(), "registry.yaml"), nil),
		Options{CertFile: certFile, KeyFile: keyFile, ShutdownDelay: 50 * time.Millisecond})
	ctx, stop := context.WithCancel(t.Context())
	addr, served := tlsServer(t, srv, ctx)
	body := review(t, strangerCase(t))

	// A request whose body is only half sent when shutdown begins.
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "https://"+addr+"/validate", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = int64(len(body))
	type result struct {
		status int
		body   []byte
		err    error
	}
	answered := make(chan result, 1)
	go func() {
		resp, err := client(ca).Do(req)
		if err != nil {
			answered <- result{err: err}
			return
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		answered <- result{resp.StatusCode, body, err}
	}()
	if _, err := pw.Write(body[:len(body)/2]); err != nil {
		t.Fatal(err)
	}
	stop()
	waitFor(t, "readiness to fail", func() bool { return srv.Ready() != nil })
	if _, err := pw.Write(body[len(body)/2:]); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	res := <-answered
	if res.err != nil {
		t.Fatalf("the in-flight request failed: %v", res.err)
	}
	if res.status != http.StatusOK || answer(t, res.body).Allowed {
		t.Fatalf("in-flight request got %d %s, want its denial", res.status, res.body)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if ok() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
