package load

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/scale"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// slowWebhook answers allowed after a fixed service time, one request at a
// time, like a saturated server.
func slowWebhook(t *testing.T, service time.Duration) *Target {
	t.Helper()
	busy := make(chan struct{}, 1)
	null := NullWebhook()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		busy <- struct{}{}
		time.Sleep(service)
		null.ServeHTTP(w, r)
		<-busy
	}))
	t.Cleanup(srv.Close)
	return &Target{Name: "slow", URL: srv.URL, Client: srv.Client()}
}

func TestOpenLoopCountsLatencyFromWhenRequestsWereDue(t *testing.T) {
	// The server takes 20 ms a request, so it answers 50/s. Offered 100/s for
	// a second, half the requests wait behind the others: the last ones wait
	// about half a second. Closed-loop, the same server shows 20 ms.
	target := slowWebhook(t, 20*time.Millisecond)
	corpus := scale.Corpus(10, 20)
	closed := Drive(t.Context(), target, corpus, Run{Mode: Saturated, Workers: 1, Duration: time.Second})
	open := Drive(t.Context(), target, corpus, Run{Mode: OpenLoop, Rate: 100, Workers: 64, Duration: time.Second})
	if closed.Errors+open.Errors > 0 {
		t.Fatalf("errors: %s %s", closed.FirstError, open.FirstError)
	}
	if closed.Latency.P99 > 200*time.Millisecond {
		t.Errorf("closed-loop p99 = %s, want about the 20 ms service time", closed.Latency.P99)
	}
	if open.Latency.P99 < 300*time.Millisecond {
		t.Errorf("open-loop p99 = %s, want the queueing behind a server at half the offered rate (about 500 ms)", open.Latency.P99)
	}
	if open.Requests < 95 || open.Requests > 101 {
		t.Errorf("open-loop sent %d requests in a second at 100/s", open.Requests)
	}
}

func TestRunsCheckEveryAnswer(t *testing.T) {
	srv := httptest.NewTLSServer(NullWebhook())
	t.Cleanup(srv.Close)
	corpus := scale.Corpus(10, 40)
	refused := 0
	for _, c := range corpus {
		if !c.Allowed {
			refused++
		}
	}
	// The null webhook allows everything: as a deciding target, every refused
	// request of the corpus is a wrong answer.
	target := &Target{Name: "null", URL: srv.URL, Client: srv.Client(), Decides: true}
	res := Drive(t.Context(), target, corpus, Run{Mode: Saturated, Workers: 2, Duration: 10 * time.Second, MaxRequests: len(corpus)})
	if res.Requests != int64(len(corpus)) || res.Wrong != int64(refused) || res.Errors != 0 {
		t.Errorf("%d requests, %d wrong, %d errors; want %d, %d, 0 (%s)", res.Requests, res.Wrong, res.Errors, len(corpus), refused, res.FirstError)
	}

	// An answer for another request is an error, not an answer.
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"response":{"uid":"someone-else","allowed":true}}`))
	}))
	t.Cleanup(other.Close)
	target = &Target{Name: "other", URL: other.URL, Client: other.Client()}
	res = Drive(t.Context(), target, corpus, Run{Mode: Saturated, Workers: 1, Duration: 10 * time.Second, MaxRequests: 5})
	if res.Requests != 5 || res.Errors != 5 || !strings.Contains(res.FirstError, "not the AdmissionReview answer") {
		t.Errorf("%d requests, %d errors (%s); want 5 errors", res.Requests, res.Errors, res.FirstError)
	}
}

func TestAnExchangeIsTimedFromWhenItWasDueAndItsAnswerStillChecked(t *testing.T) {
	failing := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	t.Cleanup(failing.Close)
	req := &scale.Corpus(10, 1)[0]
	tests := []struct {
		name   string
		target *Target
		want   string
	}{
		{"a refused request is an error", &Target{URL: failing.URL, Client: failing.Client()}, "status 503: overloaded"},
		{"an unreachable target is an error", &Target{URL: "https://127.0.0.1:1", Client: failing.Client()}, "connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			due := time.Now().Add(-time.Hour)
			latency, err := tc.target.exchange(req, due)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if latency < time.Hour || latency > time.Hour+time.Minute {
				t.Errorf("latency %s, want it counted from when the request was due, an hour ago", latency)
			}
		})
	}
}

func TestTheCorpusExpectsTheEnginesAnswers(t *testing.T) {
	snap, err := registry.Parse("scale.yaml", scale.Registry(10))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(t.Context(), snap, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	view := clusterview.New(registry.DefaultTenantLabel)
	scale.Fill(view, 10, 10, 2)
	kinds := map[string]bool{}
	for _, c := range scale.Corpus(10, 20) {
		req, err := admission.Decode(c.Body)
		if err != nil {
			t.Fatal(err)
		}
		d, err := eng.Validate(t.Context(), req, view)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != c.Allowed {
			t.Errorf("%s: engine allowed=%t (%v), corpus expects %t", c.Kind, d.Allowed, d.Deny, c.Allowed)
		}
		kinds[c.Kind] = true
	}
	if len(kinds) != 7 {
		t.Errorf("the corpus has %d kinds of request, want 7: %v", len(kinds), kinds)
	}
}

func TestParseMicroTakesTheMedianOfEachBenchmark(t *testing.T) {
	out := `goos: linux
BenchmarkReview/tenants=10-2   	1000	  600000 ns/op	  122103 B/op	    2464 allocs/op
BenchmarkReview/tenants=10-2   	1000	  500000 ns/op	  122103 B/op	    2464 allocs/op
BenchmarkReview/tenants=10-2   	1000	  900000 ns/op	  122103 B/op	    2464 allocs/op
BenchmarkHTTPS/validate/clients=2-2  20000  175956 ns/op  5683 req/s  263.0 p50-µs
PASS
`
	ms, err := ParseMicro(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Name != "BenchmarkReview/tenants=10" || ms[0].Runs != 3 || ms[0].Metrics["ns/op"] != 600000 {
		t.Fatalf("parsed %+v", ms)
	}
	if v, ok := metric(ms, "BenchmarkHTTPS/validate/clients=2", "req/s"); !ok || v != 5683 {
		t.Errorf("req/s = %v, %t", v, ok)
	}
}

func TestChecksCompareTheFiguresWithTheTargets(t *testing.T) {
	r := &Report{
		Results: []Result{
			{Target: TargetNull, Mode: Saturated, Throughput: 20000},
			{Target: TargetTenantguard, Mode: Saturated, Throughput: 12000},
			{Target: TargetOPA, Mode: Saturated, Throughput: 5000},
			{Target: TargetOPAUncounted, Mode: Saturated, Throughput: 1200},
			{Target: TargetOPACounted, Mode: Saturated, Throughput: 30},
			{Target: TargetNull, Mode: OpenLoop, Rate: 2000, Latency: Percentiles{P99: 2 * time.Millisecond}},
			{Target: TargetTenantguard, Mode: OpenLoop, Rate: 2000, Latency: Percentiles{P99: 4 * time.Millisecond}},
		},
		Targets: map[string]TargetInfo{TargetTenantguard: {PeakRSS: 120, Ready: time.Second}},
		Micro:   []Micro{{Name: "BenchmarkReview/tenants=10", Metrics: map[string]float64{"ns/op": 100}}},
	}
	want := map[string]string{
		"webhook throughput":  "met",
		"p99 at 2,000":        "not met",
		"decision at 10,000":  "missing",
		"RSS":                 "met",
		"ready":               "met",
		"≥ 3× the throughput": "not met",
		"need no tenant-wide": "met",
		"Gatekeeper's engine": "missing",
	}
	checks := r.Checks()
	if len(checks) != len(want) {
		t.Fatalf("%d checks, want %d", len(checks), len(want))
	}
	for _, c := range checks {
		got := "not met"
		switch {
		case c.Missing:
			got = "missing"
		case c.Met:
			got = "met"
		}
		for key, w := range want {
			if strings.Contains(c.Target, key) && got != w {
				t.Errorf("%s: %s (%s), want %s", c.Target, got, c.Measured, w)
			}
		}
	}
}

func TestTheGatekeeperTargetIsMetAtEveryTenantCountOrNot(t *testing.T) {
	micro := func(gk10, gk1000 float64) []Micro {
		ms := []Micro{
			{Name: "BenchmarkDecisionSideBySide/tenants=10/engine=embedded", Metrics: map[string]float64{"ns/op": 100}},
			{Name: "BenchmarkDecisionSideBySide/tenants=10/engine=gatekeeper", Metrics: map[string]float64{"ns/op": gk10}},
			{Name: "BenchmarkDecisionSideBySide/tenants=1000/engine=embedded", Metrics: map[string]float64{"ns/op": 100}},
		}
		if gk1000 > 0 {
			ms = append(ms, Micro{Name: "BenchmarkDecisionSideBySide/tenants=1000/engine=gatekeeper", Metrics: map[string]float64{"ns/op": gk1000}})
		}
		return ms
	}
	tests := []struct {
		name          string
		gk10, gk1000  float64
		missing, met  bool
		measuredParts []string
	}{
		{"5x at both counts", 600, 50000, false, true, []string{"10 tenants: 100ns vs 600ns: 6.0×", "1,000 tenants: 100ns vs 50µs: 500.0×"}},
		{"under 5x at one count", 400, 50000, false, false, []string{"10 tenants: 100ns vs 400ns: 4.0×"}},
		{"one count not measured", 600, 0, true, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{Micro: micro(tt.gk10, tt.gk1000)}
			for _, c := range r.Checks() {
				if !strings.Contains(c.Target, "Gatekeeper's engine") {
					continue
				}
				if c.Missing != tt.missing || c.Met != tt.met {
					t.Errorf("missing %v met %v (%s), want missing %v met %v", c.Missing, c.Met, c.Measured, tt.missing, tt.met)
				}
				for _, part := range tt.measuredParts {
					if !strings.Contains(c.Measured, part) {
						t.Errorf("measured %q lacks %q", c.Measured, part)
					}
				}
				if !strings.Contains(c.Target, "10 and 1,000 tenants") || !strings.Contains(c.Target, "decoding counted on both sides") {
					t.Errorf("the target %q does not say what it measures", c.Target)
				}
				return
			}
			t.Fatal("no Gatekeeper check")
		})
	}
}

func TestUpdateBenchmarksRewritesOnlyItsSection(t *testing.T) {
	file := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	intro := "# Benchmarks\n\nIntro.\n"
	old := "\n## Older entry\n\nkept\n"
	if err := os.WriteFile(file, []byte(intro+old), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, figure := range []string{"first", "second"} {
		r := &Report{Date: figure, Targets: map[string]TargetInfo{}}
		if err := UpdateBenchmarks(file, r.Markdown("")); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(file)
	doc := string(data)
	if !strings.HasPrefix(doc, intro) || !strings.HasSuffix(doc, old) || strings.Count(doc, beginMarker) != 1 ||
		strings.Contains(doc, "first") || !strings.Contains(doc, "## `make bench`, second") {
		t.Errorf("rewritten document:\n%s", doc)
	}
	if err := os.WriteFile(file, []byte(intro+beginMarker+"\n"+old), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := UpdateBenchmarks(file, "x"); err == nil {
		t.Error("a document with only one marker was rewritten")
	}
}

func TestNullWebhookAnswersAllowedForTheRequestsUID(t *testing.T) {
	rec := httptest.NewRecorder()
	body := scale.Corpus(10, 1)[0].Body
	NullWebhook().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/", strings.NewReader(string(body))))
	var a answer
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || a.Response == nil || a.Response.UID != "req-0" || !a.Response.Allowed {
		t.Errorf("answer %s (%v)", rec.Body.String(), err)
	}
	rec = httptest.NewRecorder()
	NullWebhook().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/", strings.NewReader("{}")))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("a review without a request got %d", rec.Code)
	}
}

func TestInterleaveTakesTurnsAndAddsUpEachTargetsSegments(t *testing.T) {
	// Two webhooks log each request as it arrives. Driven in three rounds,
	// the order reversed every other round, the log reads a, b, b, a, a,
	// b: runs of a and b, in turn, three changes. Each result covers its
	// target's three segments.
	var mu sync.Mutex
	var log []string
	target := func(name string) *Target {
		null := NullWebhook()
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			log = append(log, name)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			null.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		return &Target{Name: name, URL: srv.URL, Client: srv.Client()}
	}
	a, b := target("a"), target("b")
	corpus := scale.Corpus(10, 20)
	results := Interleave(t.Context(), []*Target{a, b}, corpus, Run{Mode: Saturated, Workers: 1, Duration: 1500 * time.Millisecond}, 3)
	mu.Lock()
	defer mu.Unlock()
	var turns []string
	for i, name := range log {
		if i == 0 || name != log[i-1] {
			turns = append(turns, name)
		}
	}
	if strings.Join(turns, " ") != "a b a b" {
		t.Errorf("the targets took turns %v over %d requests, want a b a b (a b, b a, a b)", turns, len(log))
	}
	for i, res := range results {
		served := 0
		for _, name := range log {
			if name == res.Target {
				served++
			}
		}
		// 1.5 s in all, at most 200 requests a second (5 ms each, one
		// worker): over the segments' time, not the whole run's 3 s.
		if res.Target != []string{"a", "b"}[i] || res.Requests != int64(served) || res.Errors != 0 ||
			res.Throughput > 200 || res.Throughput < float64(served)/2.5 {
			t.Errorf("%s: %d requests (%d served), %d errors, %.0f req/s; want every segment added up over 1.5 s",
				res.Target, res.Requests, served, res.Errors, res.Throughput)
		}
	}
}

func TestASeriesKnowsCPUTimeOnlyWhenEverySegmentReadIt(t *testing.T) {
	srv := httptest.NewTLSServer(NullWebhook())
	t.Cleanup(srv.Close)
	reads := 0
	target := &Target{Name: "null", URL: srv.URL, Client: srv.Client(), CPU: func() (time.Duration, error) {
		if reads++; reads == 3 { // the second segment's start
			return 0, errors.New("gone")
		}
		return time.Duration(reads) * time.Second, nil
	}}
	corpus := scale.Corpus(10, 20)
	s := newSeries()
	segment := Run{Mode: Saturated, Workers: 1, Duration: time.Second, MaxRequests: 10}
	s.drive(t.Context(), target, corpus, segment)
	if res := s.result("null", segment); res.TargetCPU != time.Second/10 || res.Requests != 10 {
		t.Fatalf("after one segment: %v a request over %d requests, want 100ms over 10", res.TargetCPU, res.Requests)
	}
	s.drive(t.Context(), target, corpus, segment)
	if res := s.result("null", segment); res.TargetCPU != 0 || res.Requests != 10 {
		t.Errorf("after a segment that could not read it: %v a request over %d requests, want 0 (unknown) over 10 (the bound is the series')", res.TargetCPU, res.Requests)
	}
	s.drive(t.Context(), target, corpus, segment)
	if res := s.result("null", segment); res.TargetCPU != 0 {
		t.Errorf("after a later segment that read it: %v a request, want 0: the series missed a segment's", res.TargetCPU)
	}
}

func TestWorkersKeepTheirHistogramsFromOneSegmentToTheNextAndEachLatencyCountsOnce(t *testing.T) {
	c := collector{hist: newHistogram()}
	first := c.workerHistograms(2)
	record(first[0], time.Millisecond)
	record(first[1], 2*time.Millisecond)
	for _, h := range first {
		c.merge(h)
	}
	second := c.workerHistograms(3)
	if len(second) != 3 || second[0] != first[0] || second[1] != first[1] {
		t.Fatal("a later segment's workers did not get the earlier one's histograms")
	}
	for i, h := range second {
		if h.TotalCount() != 0 {
			t.Errorf("worker %d starts the segment with %d latencies", i, h.TotalCount())
		}
	}
	record(second[2], 3*time.Millisecond)
	for _, h := range second {
		c.merge(h)
	}
	if got := c.hist.TotalCount(); got != 3 {
		t.Errorf("the collector counts %d latencies, want the 3 recorded", got)
	}
}
