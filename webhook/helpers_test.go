package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/metrics"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/tests/fixtures"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// newStore is a store with the corpus registry (registry file of the
// fixtures folder) and cluster, and the given policy (nil: embedded).
func newStore(t testing.TB, registryFile string, modules map[string]string) *state.Store {
	t.Helper()
	view := clusterview.New("tenantguard.io/tenant")
	objects, err := clusterview.LoadFile(fixtures.ClusterFile())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objects {
		view.Upsert(o)
	}
	store := state.New(view, state.Options{Logger: discard})
	ctx := context.Background()
	var cat *catalog.Catalog
	if modules != nil {
		var err error
		if cat, err = fixtures.Library(modules); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.LoadPolicy(ctx, "test", cat); err != nil {
		t.Fatal(err)
	}
	if registryFile != "" {
		data, err := os.ReadFile(registryFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.LoadRegistry(ctx, registryFile, data); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

func newServer(t testing.TB, store *state.Store, opts Options) (*Server, *metrics.Metrics) {
	t.Helper()
	m := metrics.New()
	s, err := New(store, m, discard, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}

// post sends a body to a path of the handler and returns the status and body.
func post(t testing.TB, h http.Handler, path, contentType string, body []byte) (int, []byte) {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// answer decodes an AdmissionReview answer.
func answer(t testing.TB, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Response == nil {
		t.Fatalf("not an AdmissionReview answer (%v): %s", err, body)
	}
	return review.Response
}

// counter reads a counter or gauge value with the given labels.
func counter(t testing.TB, m *metrics.Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue metrics
				}
			}
			if metric.GetCounter() != nil {
				return metric.GetCounter().GetValue()
			}
			return metric.GetGauge().GetValue()
		}
	}
	return 0
}

// strangerCase is the corpus case of a stranger creating a namespace in a
// tenant: refused by namespace-ownership.
func strangerCase(t testing.TB) fixtures.Case {
	const name = "non-owner is told he owns no tenant"
	t.Helper()
	cases, err := fixtures.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no corpus case %q", name)
	return fixtures.Case{}
}

func review(t testing.TB, c fixtures.Case) []byte {
	t.Helper()
	body, err := c.Review()
	if err != nil {
		t.Fatal(err)
	}
	return body
}
