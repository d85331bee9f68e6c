package load

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/auditloop"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/tests/scale"
)

// countingPager counts the list requests of the audit.
type countingPager struct {
	*auditCluster
	lists atomic.Int64
}

func (p *countingPager) Page(ctx context.Context, gvr schema.GroupVersionResource, limit int64, token string) ([]byte, error) {
	p.lists.Add(1)
	return p.auditCluster.Page(ctx, gvr, limit, token)
}

// auditedStore is a store holding the scale registry and view of s.
func auditedStore(t *testing.T, s Scale) *state.Store {
	t.Helper()
	view := clusterview.New(registry.DefaultTenantLabel)
	scale.Fill(view, s.Tenants, s.Namespaces, s.Pods)
	store := state.New(view, state.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := store.LoadPolicy(t.Context(), "embedded", nil); err != nil {
		t.Fatal(err)
	}
	if err := store.LoadRegistry(t.Context(), "scale", scale.Registry(s.Tenants)); err != nil {
		t.Fatal(err)
	}
	return store
}

func TestTheAuditClusterIsTheScaleViewWithOneViolationPerTenant(t *testing.T) {
	// Every object of the scale view is audited; only the planted pods
	// violate a rule: the pods the API server holds, with what the
	// controllers and the kubelet add, are otherwise what admission
	// admits.
	s := Scale{Tenants: 12, Namespaces: 3, Pods: 7}
	cluster := &auditCluster{scale: s}
	cluster.gate = *newGate()
	cluster.gate.resume()
	pager := &countingPager{auditCluster: cluster}
	sink := &reportSink{gate: &cluster.gate}
	l := auditloop.New(auditedStore(t, s), pager, cluster, sink, cluster.mapper(), auditloop.Options{PageSize: 5, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	result, err := l.Once(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	namespaces := s.Tenants * s.Namespaces
	if want := namespaces * (1 + s.Pods + 2); result.Objects != want {
		t.Errorf("%d objects audited, want %d", result.Objects, want)
	}
	if len(result.Rows) != s.Tenants {
		t.Fatalf("%d rows, want one per tenant: %+v", len(result.Rows), result.Rows)
	}
	for _, r := range result.Rows {
		if r.Rule != "image-registry" || r.Kind != "Pod" || r.Name != "p0" || !strings.HasSuffix(r.Namespace, "-ns0") {
			t.Errorf("row %+v: want the image-registry row of a tenant's ns0/p0", r)
		}
	}
	if sink.applied.Load() != int64(s.Tenants) || sink.bytes.Load() < int64(s.Tenants)*200 {
		t.Errorf("%d reports of %d bytes written, want one per tenant", sink.applied.Load(), sink.bytes.Load())
	}
	// Page by page: 5 objects a request.
	if lists := pager.lists.Load(); lists < int64(namespaces*(1+s.Pods+2)/5) {
		t.Errorf("%d list requests: the audit did not list page by page", lists)
	}
}

func TestTheGateHoldsTheAuditUntilResumedAndCountsTheTimeHeld(t *testing.T) {
	s := Scale{Tenants: 4, Namespaces: 2, Pods: 3}
	var out fixtures.SyncBuffer
	r := newAuditRunner(s, &out, &sync.Mutex{})
	store := auditedStore(t, s)
	l := auditloop.New(store, r.cluster, r.cluster, r.sink, r.cluster.mapper(), auditloop.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	done := make(chan error, 1)
	go func() { _, err := l.Once(t.Context()); done <- err }()
	if !r.cluster.gate.pause(10 * time.Second) {
		t.Fatal("a new (paused) gate did not hold the audit")
	}
	select {
	case <-done:
		t.Fatal("the audit went on while held")
	case <-time.After(200 * time.Millisecond):
	}
	r.command(auditResumeCommand)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if held := r.cluster.gate.Held(); held < 200*time.Millisecond {
		t.Errorf("held %s, want at least the 200 ms it was held", held)
	}
	if !strings.Contains(out.String(), `"auditBaseline"`) {
		t.Errorf("no baseline reported at the first resume: %s", out.String())
	}
}

func TestAuditLoadRunsTheAuditInTheAuditedTargetsTurns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers")
	}
	cfg := AuditLoadConfig{
		// an audit of these 500 objects takes about 2 s under the race
		// detector, held at each list request (100 objects) while
		// another target takes its turn
		Scale: Scale{Tenants: 10, Namespaces: 10, Pods: 2}, Corpus: 100, Rate: 200, Workers: 16,
		Duration: 5 * time.Second, Rounds: 3, Warmup: 200 * time.Millisecond, Idle: true, Log: io.Discard,
	}
	report, err := AuditLoad(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p := report.Problems(); len(p) > 0 {
		t.Fatal(p)
	}
	if len(report.Results) != 3 {
		t.Fatalf("%d results, want the null webhook, tenantguard and %s", len(report.Results), TargetAudited)
	}
	for _, res := range report.Results {
		if res.Requests < 700 {
			t.Errorf("%s: %d requests, want about 1,000", res.Target, res.Requests)
		}
	}
	s := report.Stats()
	if s.Objects != 10*10*(1+2+2) || s.Violations != 10 || s.Reports != 10 {
		t.Errorf("audit %+v: want 500 objects, 10 violations and 10 reports", s)
	}
	for _, a := range report.Audits {
		if a.Took <= 0 || a.Took > a.Wall || a.PeakRSS == 0 || a.PeakHeap == 0 {
			t.Errorf("audit %+v: duration or memory not measured", a)
		}
	}
	if report.Baseline.RSS == 0 || report.Baseline.Heap == 0 {
		t.Errorf("no baseline memory: %+v", report.Baseline)
	}
	md := report.Markdown("shared")
	for _, want := range []string{auditBeginMarker, auditEndMarker, "| " + TargetAudited + " |", "audits completed", "shared"} {
		if !strings.Contains(md, want) {
			t.Errorf("the section lacks %q:\n%s", want, md)
		}
	}
}

func TestUpdateAuditBenchmarksGoesAfterMakeBenchsSectionAndRewritesOnlyItsOwn(t *testing.T) {
	file := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	head := "# Benchmarks\n\nIntro.\n\n" + beginMarker + "\n## `make bench`, x\n" + endMarker + "\n"
	tail := "\n## `make soak`, y\n\nkept\n"
	if err := os.WriteFile(file, []byte(head+tail), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, date := range []string{"first", "second"} {
		r := &AuditLoadReport{Date: date, Rate: 2000, PeakRSS: map[string]float64{}}
		if err := UpdateAuditBenchmarks(file, r.Markdown("")); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(file)
	doc := string(data)
	if !strings.HasPrefix(doc, head+"\n"+auditBeginMarker) || !strings.HasSuffix(doc, auditEndMarker+"\n"+tail) ||
		strings.Count(doc, auditBeginMarker) != 1 || strings.Contains(doc, "bench-audit`, first") || !strings.Contains(doc, "## `make bench-audit`, second") {
		t.Errorf("rewritten document:\n%s", doc)
	}
	if err := os.WriteFile(file, []byte(head+auditEndMarker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := UpdateAuditBenchmarks(file, "x"); err == nil {
		t.Error("a document with only one marker was rewritten")
	}
}

func TestTheLatencyTargetNeedsACompletedAuditAndAP99WithinOneAndAHalfTimesTheNulls(t *testing.T) {
	r := &AuditLoadReport{Results: []Result{
		{Target: TargetNull, Latency: Percentiles{P99: 10 * time.Millisecond}},
		{Target: TargetAudited, Latency: Percentiles{P99: 14 * time.Millisecond}},
	}}
	if r.Met() {
		t.Error("met without a completed audit")
	}
	r.Audits = []AuditFigures{{N: 1}}
	if !r.Met() {
		t.Error("1.4× not met")
	}
	r.Results[1].Latency.P99 = 16 * time.Millisecond
	if r.Met() {
		t.Error("1.6× met")
	}
}
