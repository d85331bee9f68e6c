package webhook

import (
	"bytes"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/webhook/selfsigned"
)

// clientWithCert is a client trusting ca that presents a client
// certificate of signer, whatever CAs the server asks for.
func clientWithCert(t *testing.T, ca, signer *selfsigned.CA) *http.Client {
	t.Helper()
	certPEM, keyPEM, err := signer.Client("kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	c := client(ca)
	c.Transport.(*http.Transport).TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	return c
}

func TestWithAClientCAOnlyCallersItSignedAreAnswered(t *testing.T) {
	dir := t.TempDir()
	ca, certFile, keyFile := certFiles(t, dir)
	callers, err := selfsigned.NewCA("api-server-clients")
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "clients.crt")
	if err := os.WriteFile(caFile, callers.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	other, err := selfsigned.NewCA("someone-else")
	if err != nil {
		t.Fatal(err)
	}
	srv, m := newServer(t, newStore(t, filepath.Join(fixtures.Dir(), "registry.yaml"), nil), Options{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile})
	addr, _ := tlsServer(t, srv, t.Context())
	base := "https://" + addr
	bodies, err := fixtures.Reviews()
	if err != nil {
		t.Fatal(err)
	}
	body := bodies[0]
	send := func(c *http.Client, path string) (int, error) {
		resp, err := c.Post(base+path, "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	tests := []struct {
		name   string
		client *http.Client
		path   string
		status int
		// handshake is the TLS error wanted instead of a status
		handshake string
	}{
		{"the API server's certificate is answered on /validate", clientWithCert(t, ca, callers), "/validate", http.StatusOK, ""},
		{"the API server's certificate is answered on /mutate", clientWithCert(t, ca, callers), "/mutate", http.StatusOK, ""},
		{"a caller without a certificate is refused on /validate", client(ca), "/validate", http.StatusUnauthorized, ""},
		{"a caller without a certificate is refused on /mutate", client(ca), "/mutate", http.StatusUnauthorized, ""},
		{"a certificate of another CA fails the handshake", clientWithCert(t, ca, other), "/validate", 0, "certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, err := send(tt.client, tt.path)
			if tt.handshake != "" {
				if err == nil || !strings.Contains(err.Error(), tt.handshake) {
					t.Fatalf("status %d, error %v; want a TLS error about the %s", status, err, tt.handshake)
				}
				return
			}
			if err != nil || status != tt.status {
				t.Fatalf("status %d, error %v; want %d", status, err, tt.status)
			}
		})
	}
	t.Run("refused callers are counted, not decided", func(t *testing.T) {
		for _, webhook := range []string{"validate", "mutate"} {
			if n := counter(t, m, "tenantguard_admission_requests_total", map[string]string{"webhook": webhook, "decision": "unauthenticated"}); n != 1 {
				t.Errorf("%s: %v unauthenticated requests counted, want 1", webhook, n)
			}
		}
	})
	t.Run("probes and metrics stay open", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
			if status := get(t, client(ca), base+path); status != http.StatusOK {
				t.Errorf("%s: %d", path, status)
			}
		}
	})
	t.Run("a client CA file without certificates is an error", func(t *testing.T) {
		bad := filepath.Join(dir, "empty.crt")
		if err := os.WriteFile(bad, []byte("nothing"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := New(newStore(t, "", nil), nil, discard, Options{CertFile: certFile, KeyFile: keyFile, ClientCAFile: bad}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
			t.Fatalf("error %v", err)
		}
	})
}
