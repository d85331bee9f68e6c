package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/tests/scale"
)

// Scale of the benchmark's cluster view: 1,000 tenants, 10,000 namespaces,
// 100,000 pods.
const (
	benchTenants    = 1000
	benchNamespaces = 10
	benchPods       = 10
)

// benchClients are the numbers of concurrent keep-alive HTTPS clients: two
// show the service time, 32 the throughput under queueing.
var benchClients = []int{2, 32}

// BenchmarkHTTPS posts pod CREATE reviews over HTTPS from concurrent
// keep-alive clients to a server whose view holds the full scale, and
// reports throughput, latency percentiles and the process RSS (server and
// clients share the process).
func BenchmarkHTTPS(b *testing.B) {
	view := clusterview.New(registry.DefaultTenantLabel)
	scale.Fill(view, benchTenants, benchNamespaces, benchPods)
	store := state.New(view, state.Options{Logger: discard})
	ctx := context.Background()
	if err := store.LoadPolicy(ctx, "embedded", nil); err != nil {
		b.Fatal(err)
	}
	if err := store.LoadRegistry(ctx, "scale", scale.Registry(benchTenants)); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	ca, certFile, keyFile := certFiles(b, dir)
	srv, _ := newServer(b, store, Options{CertFile: certFile, KeyFile: keyFile})
	addr, _ := tlsServer(b, srv, b.Context())
	bodies := make([][]byte, benchTenants)
	for i := range bodies {
		bodies[i] = scale.PodCreate(i, scale.PodSpec)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64,
	}}

	for _, webhook := range []string{Validate, Mutate} {
		for _, clients := range benchClients {
			b.Run(webhook+"/clients="+strconv.Itoa(clients), func(b *testing.B) {
				benchmarkClients(b, client, "https://"+addr+"/"+webhook+"?timeout=10s", bodies, clients)
			})
		}
	}
}

// benchmarkClients runs b.N requests from clients goroutines and reports
// throughput, latency percentiles and RSS.
func benchmarkClients(b *testing.B, client *http.Client, url string, bodies [][]byte, clients int) {
	var mu sync.Mutex
	var latencies []time.Duration
	b.SetParallelism(max(1, clients/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		own := make([]time.Duration, 0, 1024)
		for i := 0; pb.Next(); i++ {
			t0 := time.Now()
			if err := postReview(client, url, bodies[i%len(bodies)]); err != nil {
				b.Error(err)
				return
			}
			own = append(own, time.Since(t0))
		}
		mu.Lock()
		latencies = append(latencies, own...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if len(latencies) == 0 {
		return
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(percentile(latencies, 50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(latencies, 99).Microseconds()), "p99-µs")
	b.ReportMetric(rssMiB(), "rss-MiB")
}

// postReview sends one review and checks that it was allowed.
func postReview(c *http.Client, url string, body []byte) error {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &review); err != nil || review.Response == nil || !review.Response.Allowed {
		return &unexpected{resp.StatusCode, string(out)}
	}
	return nil
}

type unexpected struct {
	status int
	body   string
}

func (u *unexpected) Error() string {
	return "unexpected answer " + strconv.Itoa(u.status) + ": " + u.body
}

func percentile(sorted []time.Duration, p int) time.Duration {
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// rssMiB is the resident set size of this process from /proc, or 0.
func rssMiB() float64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err == nil {
				return float64(kb) / 1024
			}
		}
	}
	return 0
}
