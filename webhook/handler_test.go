package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/metrics"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/internal/usage"
	"github.com/tenantguard/tenantguard/tests/fixtures"
)

func TestBadInputIsRefusedWith400(t *testing.T) {
	store := newStore(t, filepath.Join(fixtures.Dir(), "registry.yaml"), nil)
	srv, m := newServer(t, store, Options{MaxBodyBytes: 4096})
	valid := review(t, strangerCase(t))
	tests := []struct {
		name        string
		method      string
		contentType string
		body        []byte
		status      int
		message     string
	}{
		{"a GET is refused", http.MethodGet, "application/json", nil, http.StatusMethodNotAllowed, "method GET not allowed"},
		{"a text body is refused", http.MethodPost, "text/plain", valid, http.StatusBadRequest, `content type "text/plain" is not application/json`},
		{"a missing content type is refused", http.MethodPost, "", valid, http.StatusBadRequest, `content type "" is not application/json`},
		{"a body over the limit is refused", http.MethodPost, "application/json", append([]byte(`{"a":"`), bytes.Repeat([]byte("x"), 5000)...), http.StatusBadRequest, "over the 4096 byte limit"},
		{"an empty body is refused", http.MethodPost, "application/json", nil, http.StatusBadRequest, "the body is empty"},
		{"YAML is refused", http.MethodPost, "application/json", []byte("apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\n"), http.StatusBadRequest, "not a JSON object"},
		{"truncated JSON is refused", http.MethodPost, "application/json", valid[:len(valid)/2], http.StatusBadRequest, "not an AdmissionReview"},
		{"a v1beta1 review is refused", http.MethodPost, "application/json", []byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"1"}}`), http.StatusBadRequest, "expected apiVersion admission.k8s.io/v1"},
		{"another kind is refused", http.MethodPost, "application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"Pod"}`), http.StatusBadRequest, "expected apiVersion admission.k8s.io/v1 and kind AdmissionReview"},
		{"a review without a request is refused", http.MethodPost, "application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), http.StatusBadRequest, "has no request"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/validate", "/mutate"} {
				req := httptest.NewRequestWithContext(t.Context(), tt.method, path, bytes.NewReader(tt.body))
				if tt.contentType != "" {
					req.Header.Set("Content-Type", tt.contentType)
				}
				rec := httptest.NewRecorder()
				srv.Handler().ServeHTTP(rec, req)
				if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.message) {
					t.Errorf("%s: got %d %q, want %d containing %q", path, rec.Code, rec.Body.String(), tt.status, tt.message)
				}
			}
			if got := counter(t, m, "tenantguard_admission_requests_total", map[string]string{"webhook": "validate", "decision": metrics.DecisionBadRequest}); got != float64(i+1) {
				t.Errorf("bad_request count = %v, want %d", got, i+1)
			}
		})
	}
}

func TestJSONIsAcceptedWhateverItsParametersAndCase(t *testing.T) {
	store := newStore(t, filepath.Join(fixtures.Dir(), "registry.yaml"), nil)
	srv, _ := newServer(t, store, Options{})
	valid := review(t, strangerCase(t))
	for _, contentType := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON"} {
		t.Run(contentType, func(t *testing.T) {
			if status, body := post(t, srv.Handler(), "/validate", contentType, valid); status != http.StatusOK {
				t.Fatalf("got %d %s, want an answer", status, body)
			}
		})
	}
}

// alone is the local ledger giving every place back once decided: the
// corpus's cases are each decided on their own, not as a series of creates.
type alone struct{ quota.LocalLedger }

func (l alone) Reserve(ctx context.Context, c quota.Claim, tenants []string) (map[string]int, quota.Hold, error) {
	counts, hold, err := l.LocalLedger.Reserve(ctx, c, tenants)
	return counts, releasing{hold}, err
}

// ReserveUsage gives what a pod or claim adds back once decided, as
// Reserve gives its place.
func (l alone) ReserveUsage(ctx context.Context, c quota.Claim, tenant string, adds, expect usage.List) (map[string]int64, quota.Hold, error) {
	used, hold, err := l.LocalLedger.ReserveUsage(ctx, c, tenant, adds, expect)
	return used, releasing{hold}, err
}

type releasing struct{ quota.Hold }

func (h releasing) Keep(context.Context) error {
	h.Release()
	return nil
}

// TestWebhooksAgreeWithTheCorpus sends every corpus case through /mutate,
// applies the patch as the API server would, then through /validate.
func TestWebhooksAgreeWithTheCorpus(t *testing.T) {
	cases, err := fixtures.Load()
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]*Server{}
	for _, c := range cases {
		if c.Expect.BadInput || len(c.Objects) > 0 {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			srv := servers[c.RegistryFile()]
			if srv == nil {
				store := newStore(t, c.RegistryFile(), nil)
				srv, _ = newServer(t, store, Options{Ledger: alone{quota.LocalLedger{View: store.View()}}})
				servers[c.RegistryFile()] = srv
			}
			body := review(t, c)
			status, out := post(t, srv.Handler(), "/mutate", "application/json", body)
			mutated := answer(t, out)
			if status != http.StatusOK || !mutated.Allowed {
				t.Fatalf("/mutate: %d allowed=%v %v", status, mutated.Allowed, mutated.Result)
			}
			if len(mutated.Patch) > 0 {
				body = patchReview(t, body, mutated.Patch)
			}
			status, out = post(t, srv.Handler(), "/validate", "application/json", body)
			resp := answer(t, out)
			if status != http.StatusOK || resp.Allowed != c.Expect.Allowed {
				t.Fatalf("/validate: %d allowed=%v, want %v (%v)", status, resp.Allowed, c.Expect.Allowed, resp.Result)
			}
			var denied []string
			if resp.Result != nil {
				for line := range strings.SplitSeq(resp.Result.Message, "\n") {
					id, _, _ := strings.Cut(strings.TrimPrefix(line, "["), "]")
					denied = append(denied, id)
				}
			}
			want := slices.Clone(c.Expect.Deny)
			slices.Sort(want)
			slices.Sort(denied)
			if !slices.Equal(slices.Compact(denied), slices.Compact(want)) {
				t.Fatalf("denied %v, want %v", denied, want)
			}
			for _, want := range c.Expect.Messages {
				if !strings.Contains("\n"+resp.Result.Message+"\n", "\n"+want+"\n") {
					t.Errorf("missing denial\n  %s\ngot\n  %s", want, resp.Result.Message)
				}
			}
		})
	}
}

// patchReview applies a JSON patch to request.object of a review.
func patchReview(t *testing.T, body, patch []byte) []byte {
	t.Helper()
	var review map[string]json.RawMessage
	var request map[string]json.RawMessage
	if err := json.Unmarshal(body, &review); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(review["request"], &request); err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	if request["object"], err = p.Apply(request["object"]); err != nil {
		t.Fatal(err)
	}
	if review["request"], err = json.Marshal(request); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// brittlePolicy answers every request but those named "boom", for which its
// mutations and decision have the wrong shape.
var brittlePolicy = map[string]string{"main.rego": `package tenantguard.main

mutations := [] if input.request.name != "boom"

mutations := "nope" if input.request.name == "boom"

decision := {"allowed": true, "deny": [], "warn": [], "dryrun": []} if input.request.name != "boom"

decision := {"allowed": "maybe"} if input.request.name == "boom"
`}

func TestEvaluationErrorsFailClosed(t *testing.T) {
	tests := []struct {
		name  string
		store *state.Store
		want  string
	}{
		{"a policy answering in the wrong shape refuses the request", newStore(t, filepath.Join(fixtures.Dir(), "registry.yaml"), brittlePolicy), "data.tenantguard.main."},
		{"no registry loaded yet refuses the request", newStore(t, "", nil), "no tenant registry is loaded yet"},
	}
	c := strangerCase(t)
	c.Object["metadata"] = map[string]any{"name": "boom"}
	body := review(t, c)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, m := newServer(t, tt.store, Options{})
			for _, path := range []string{"/validate", "/mutate"} {
				status, out := post(t, srv.Handler(), path, "application/json", body)
				resp := answer(t, out)
				if status != http.StatusOK || resp.Allowed || resp.Result == nil ||
					!strings.HasPrefix(resp.Result.Message, "[internal] tenantguard could not decide this request") ||
					!strings.Contains(resp.Result.Message, tt.want) {
					t.Errorf("%s: %d %+v, want an [internal] denial mentioning %q", path, status, resp.Result, tt.want)
				}
			}
			if got := counter(t, m, "tenantguard_rule_violations_total", map[string]string{"rule": "internal", "mode": "deny"}); got != 2 {
				t.Errorf("internal violations = %v, want 2", got)
			}
			if got := counter(t, m, "tenantguard_admission_requests_total", map[string]string{"webhook": "validate", "decision": metrics.DecisionError}); got != 1 {
				t.Errorf("validate errors = %v, want 1", got)
			}
		})
	}
}

func TestDenialsAreCountedByRule(t *testing.T) {
	srv, m := newServer(t, newStore(t, filepath.Join(fixtures.Dir(), "registry.yaml"), nil), Options{})
	_, out := post(t, srv.Handler(), "/validate", "application/json", review(t, strangerCase(t)))
	if answer(t, out).Allowed {
		t.Fatal("allowed")
	}
	if got := counter(t, m, "tenantguard_rule_violations_total", map[string]string{"rule": "namespace-ownership", "mode": "deny"}); got != 1 {
		t.Errorf("namespace-ownership denials = %v, want 1", got)
	}
	if got := counter(t, m, "tenantguard_admission_requests_total", map[string]string{"webhook": "validate", "decision": metrics.DecisionDenied}); got != 1 {
		t.Errorf("denied requests = %v, want 1", got)
	}
}

func TestDenialsAreCountedByTenant(t *testing.T) {
	srv, m := newServer(t, newStore(t, filepath.Join(fixtures.Dir(), "registry.yaml"), nil), Options{})
	hostNetwork := fixtures.Case{Namespace: "oil-dev", Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "oil-dev"},
		"spec": map[string]any{"hostNetwork": true, "containers": []any{map[string]any{"name": "web", "image": "nginx"}}},
	}}
	unknown := fixtures.Case{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "made-up", "labels": map[string]any{"tenantguard.io/tenant": "made-up-tenant"}},
	}}
	for _, c := range []fixtures.Case{hostNetwork, unknown} {
		if _, out := post(t, srv.Handler(), "/validate", "application/json", review(t, c)); answer(t, out).Allowed {
			t.Fatalf("%v allowed", c.Object["metadata"])
		}
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"a denial in a tenant namespace counts under the tenant", map[string]string{"rule": "host-network", "mode": "deny", "tenant": "oil"}, 1},
		{"a tenant name the registry lacks is not a label value", map[string]string{"rule": "namespace-ownership", "mode": "deny", "tenant": ""}, 1},
		{"nor is any made-up name", map[string]string{"tenant": "made-up-tenant"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := counter(t, m, "tenantguard_rule_violations_total", tt.labels); got != tt.want {
				t.Errorf("%v = %v, want %v", tt.labels, got, tt.want)
			}
		})
	}
}

func TestQueryValueReadsAParameterAsURLValues(t *testing.T) {
	for _, raw := range []string{
		"", "timeout=5s", "a=1&timeout=5s&timeout=7s", "timeout", "timeout=", "timeout=1%32s",
		"time%6Fut=3s", "timeout=a+b", "timeout=%zz&timeout=2s", "x;y=1&timeout=4s", "timeout=1;2&timeout=9s",
		"&&timeout=6s&", "timeout%zz=1&timeout=8s", "timeouts=1",
	} {
		t.Run(raw, func(t *testing.T) {
			values, _ := url.ParseQuery(raw)
			if got, want := queryValue(raw, "timeout"), values.Get("timeout"); got != want {
				t.Errorf("queryValue(%q) = %q, url.ParseQuery gives %q", raw, got, want)
			}
		})
	}
}

func TestRequestTimeoutFollowsTheAPIServer(t *testing.T) {
	tests := []struct {
		name, query string
		want        string
	}{
		{"the API server's timeout is used", "?timeout=5s", "5s"},
		{"no timeout means the default", "", "10s"},
		{"a garbled timeout means the default", "?timeout=soon", "10s"},
		{"a long timeout is capped", "?timeout=5m", "30s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/validate"+tt.query, nil)
			if got := requestTimeout(r).String(); got != tt.want {
				t.Errorf("timeout %s, want %s", got, tt.want)
			}
		})
	}
}

func TestADecisionEndsBeforeTheAPIServerStopsWaiting(t *testing.T) {
	for timeout, want := range map[time.Duration]time.Duration{
		time.Second:      900 * time.Millisecond,
		10 * time.Second: 9500 * time.Millisecond,
		30 * time.Second: 29500 * time.Millisecond,
	} {
		if got := decisionBudget(timeout); got != want {
			t.Errorf("the budget of a %s timeout is %s, want %s", timeout, got, want)
		}
	}
}

// TestARequestInANamespaceNotSeenYetIsNotDecidedWithoutIt: a tenant
// namespace created a moment ago may not have reached the view; deciding
// without its labels would not know its tenant and would let a hostNetwork
// pod through. The request waits for the namespace, and is refused with a
// retryable reason if it does not arrive.
func TestARequestInANamespaceNotSeenYetIsNotDecidedWithoutIt(t *testing.T) {
	const ns = "oil-brand-new"
	body := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"lag","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"` + ns + `","name":"p","operation":"CREATE","userInfo":{"username":"alice"},"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"` + ns + `"},"spec":{"hostNetwork":true,"containers":[{"name":"c","image":"i"}]}}}}`)
	tests := []struct {
		name    string
		arrives bool
		want    string
	}{
		{"the namespace arriving during the wait decides by its tenant's rules", true, "[host-network]"},
		{"the namespace not arriving refuses the request, to be retried", false, "[internal] tenantguard could not decide this request"},
	}
	t.Run("a namespace being created, which the API server sends as its own namespace, does not wait for itself", func(t *testing.T) {
		srv, _ := newServer(t, newStore(t, filepath.Join(fixtures.Dir(), "registry.yaml"), nil), Options{NamespaceWait: time.Hour})
		create := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"ns","kind":{"group":"","version":"v1","kind":"Namespace"},"resource":{"group":"","version":"v1","resource":"namespaces"},"namespace":"` + ns + `","name":"` + ns + `","operation":"CREATE","userInfo":{"username":"alice"},"object":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + ns + `","labels":{"tenantguard.io/tenant":"oil"}}}}}`)
		status, out := post(t, srv.Handler(), "/validate", "application/json", create)
		if resp := answer(t, out); status != http.StatusOK || (resp.Result != nil && strings.HasPrefix(resp.Result.Message, "[internal]")) {
			t.Fatalf("%d %+v, want a decision by the namespace rules", status, resp.Result)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newStore(t, filepath.Join(fixtures.Dir(), "registry.yaml"), nil)
			srv, _ := newServer(t, store, Options{NamespaceWait: 300 * time.Millisecond})
			if tt.arrives {
				time.AfterFunc(50*time.Millisecond, func() {
					store.View().Upsert(clusterview.Object{Kind: "Namespace", Resource: "namespaces", Name: ns, Labels: map[string]string{"tenantguard.io/tenant": "oil"}})
				})
			}
			status, out := post(t, srv.Handler(), "/validate", "application/json", body)
			resp := answer(t, out)
			if status != http.StatusOK || resp.Allowed || resp.Result == nil || !strings.HasPrefix(resp.Result.Message, tt.want) {
				t.Fatalf("%d allowed=%v %+v, want a denial starting %q", status, resp.Allowed, resp.Result, tt.want)
			}
		})
	}
	// The mutating webhook waits too: without the namespace it would set
	// none of the tenant's defaults, which no validating rule requires.
	for _, arrives := range []bool{true, false} {
		t.Run(fmt.Sprintf("the mutating webhook, the namespace arriving: %t", arrives), func(t *testing.T) {
			store := newStore(t, filepath.Join(fixtures.Dir(), "registry.yaml"), nil)
			srv, _ := newServer(t, store, Options{NamespaceWait: 300 * time.Millisecond})
			if arrives {
				time.AfterFunc(50*time.Millisecond, func() {
					store.View().Upsert(clusterview.Object{Kind: "Namespace", Resource: "namespaces", Name: ns, Labels: map[string]string{"tenantguard.io/tenant": "oil"}})
				})
			}
			status, out := post(t, srv.Handler(), "/mutate", "application/json", body)
			resp := answer(t, out)
			switch {
			case status != http.StatusOK:
				t.Fatalf("status %d", status)
			case arrives && (!resp.Allowed || len(resp.Patch) == 0):
				t.Fatalf("allowed=%v patch %s, want the tenant's defaults set", resp.Allowed, resp.Patch)
			case !arrives && (resp.Allowed || resp.Result == nil || !strings.HasPrefix(resp.Result.Message, "[internal]")):
				t.Fatalf("allowed=%v %+v, want an [internal] refusal to be retried", resp.Allowed, resp.Result)
			}
		})
	}
}

// TestTheAuditWaitsWhileARequestIsAnswered: a request counts from its
// handler's start to its return (state.Store.AdmitStart), so that
// the background audit, waiting for no request left (WaitQuiet), runs
// between requests: here one held up waiting for its namespace.
func TestTheAuditWaitsWhileARequestIsAnswered(t *testing.T) {
	const ns = "oil-brand-new"
	body := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"held","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"` + ns + `","name":"p","operation":"CREATE","userInfo":{"username":"alice"},"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"` + ns + `"},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`)
	for _, path := range []string{"/validate", "/mutate"} {
		t.Run(path, func(t *testing.T) {
			store := newStore(t, filepath.Join(fixtures.Dir(), "registry.yaml"), nil)
			srv, _ := newServer(t, store, Options{NamespaceWait: time.Hour})
			answered := make(chan struct{})
			go func() {
				defer close(answered)
				post(t, srv.Handler(), path, "application/json", body)
			}()
			// The request waits for its namespace: until it is counted
			// (WaitQuiet reaching its bound), the server looks quiet.
			for deadline := time.Now().Add(10 * time.Second); store.WaitQuiet(t.Context(), 10*time.Millisecond); {
				if time.Now().After(deadline) {
					t.Fatal("WaitQuiet never waited while the request was answered")
				}
				time.Sleep(10 * time.Millisecond)
			}
			quiet := make(chan struct{})
			go func() {
				store.WaitQuiet(t.Context(), time.Hour)
				close(quiet)
			}()
			select {
			case <-quiet:
				t.Fatal("WaitQuiet ended while the request was answered")
			case <-time.After(200 * time.Millisecond):
			}
			store.View().Upsert(clusterview.Object{Kind: "Namespace", Resource: "namespaces", Name: ns, Labels: map[string]string{"tenantguard.io/tenant": "oil"}})
			<-answered
			select {
			case <-quiet:
			case <-time.After(10 * time.Second):
				t.Fatal("WaitQuiet still waits after the answer")
			}
		})
	}
}
