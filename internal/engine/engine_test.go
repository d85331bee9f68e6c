package engine

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/tests/scale"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// library is the policy of a library of the given files.
func library(tb testing.TB, files map[string]string) PolicyOptions {
	tb.Helper()
	c, err := fixtures.Library(files)
	if err != nil {
		tb.Fatal(err)
	}
	return PolicyOptions{Catalog: c}
}

// withEvaluator is opts with the evaluator set.
func withEvaluator(opts PolicyOptions, evaluator string) PolicyOptions {
	opts.Evaluator = evaluator
	return opts
}

// scaleRegistry is a registry of n tenants shaped like the example's oil.
func scaleRegistry(tb testing.TB, n int) *registry.Snapshot {
	tb.Helper()
	snap, err := registry.Parse("scale.yaml", scale.Registry(n))
	if err != nil {
		tb.Fatal(err)
	}
	return snap
}

// scaleView has 10 namespaces and 50 pods for every tenant.
func scaleView(n int) *clusterview.View {
	v := clusterview.New(registry.DefaultTenantLabel)
	scale.Fill(v, n, 10, 5)
	return v
}

func podCreate(tb testing.TB, tenant int, spec string) *admission.Request {
	tb.Helper()
	req, err := admission.Decode(scale.PodCreate(tenant, spec))
	if err != nil {
		tb.Fatal(err)
	}
	return req
}

const podSpec = scale.PodSpec

func TestReviewMutatesThenValidatesTheMutatedObject(t *testing.T) {
	// The default StorageClass patch must be visible to validation: a tenant
	// whose default is not allowed would be refused after its own mutation.
	reg, err := registry.Parse("r.yaml", []byte("apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: t0\n    storageClasses: {allowed: [standard], default: standard}\n"))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := New(t.Context(), reg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	view := scaleView(1)
	req := podCreate(t, 0, `{"containers":[{"name":"c"}],"volumes":[{"name":"v","ephemeral":{"volumeClaimTemplate":{"spec":{}}}}]}`)
	before := req.Object.Copy()
	d, err := eng.Review(t.Context(), req, view)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allowed || !strings.Contains(string(d.Patch), `"value":"standard"`) {
		t.Fatalf("decision = %+v, patch %s", d, d.Patch)
	}
	if req.Object.Compare(before) != 0 {
		t.Errorf("validating the patched object changed the request's: %v", req.Object)
	}
}

func TestThePolicyReadsTheRequestAsTheAPIServerSentIt(t *testing.T) {
	// Every field of the request is the policy's to read, those tenantguard's
	// rules leave alone included; a key the API server left out is absent,
	// not empty. After a mutation, the patched object takes the place of the
	// request's and the rest stays as sent.
	const module = `package tenantguard.main

mutations := [{"op": "add", "path": "/metadata/labels/added", "value": "yes"}]

decision := {"allowed": false, "deny": [{"id": "seen", "msg": msg}], "warn": [], "dryrun": []} if {
	msg := concat("|", [
		input.request.requestKind.kind,
		object.get(input.request, "subResource", "absent"),
		object.get(input.request.object.metadata.labels, "added", "no"),
		input.request.uid,
		input.request.userInfo.uid,
	])
}
`
	eng, err := New(t.Context(), scaleRegistry(t, 1), Options{PolicyOptions: library(t, map[string]string{"m.rego": module})})
	if err != nil {
		t.Fatal(err)
	}
	req, err := admission.Decode([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",
		"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
		"requestKind":{"group":"","version":"v1","kind":"Pod"},"namespace":"t0-ns0","operation":"CREATE",
		"userInfo":{"username":"alice","uid":"a-1"},
		"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"t0-ns0","labels":{"app":"x"}},"spec":{"containers":[{"name":"c"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	view := scaleView(1)
	tests := []struct {
		name   string
		decide func() (*admission.Decision, error)
		want   string
	}{
		{"validating", func() (*admission.Decision, error) { return eng.Validate(t.Context(), req, view) }, "Pod|absent|no|u1|a-1"},
		{"mutating then validating", func() (*admission.Decision, error) { return eng.Review(t.Context(), req, view) }, "Pod|absent|yes|u1|a-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := tt.decide()
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Deny) != 1 || d.Deny[0].Msg != tt.want {
				t.Fatalf("decision %+v, want the one denial %q", d, tt.want)
			}
		})
	}
}

func TestABrokenPolicyIsRefusedWithItsErrors(t *testing.T) {
	reg := scaleRegistry(t, 1)
	tests := []struct {
		name    string
		modules map[string]string
		want    string
	}{
		{"an unsafe variable", map[string]string{"x.rego": "package tenantguard.main\ndecision := y if { x }"}, "compiling rules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(t.Context(), reg, Options{PolicyOptions: library(t, tt.modules)}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestAPolicyWithoutTheDecisionShapeFailsClosed(t *testing.T) {
	reg := scaleRegistry(t, 1)
	eng, err := New(t.Context(), reg, Options{PolicyOptions: library(t, map[string]string{"x.rego": "package tenantguard.main\nmutations := []\ndecision := {\"allowed\": \"yes\"}\n"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Review(t.Context(), podCreate(t, 0, podSpec), scaleView(1)); err == nil {
		t.Fatal("a malformed decision must be an error, never an allow")
	}
}

// BenchmarkReview is one pod CREATE (mutation + validation) with the
// registry and cluster view at each size: the cost must not grow with the
// number of tenants.
func BenchmarkReview(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("tenants=%d", n), func(b *testing.B) {
			eng, err := New(b.Context(), scaleRegistry(b, n), Options{})
			if err != nil {
				b.Fatal(err)
			}
			view := scaleView(n)
			req := podCreate(b, n/2, podSpec)
			b.ReportAllocs()
			for b.Loop() {
				d, err := eng.Review(b.Context(), req, view)
				if err != nil || !d.Allowed {
					b.Fatalf("decision %+v, %v", d, err)
				}
			}
		})
	}
}

// BenchmarkReviewDenied is a pod CREATE breaking three rules at 1,000 tenants.
func BenchmarkReviewDenied(b *testing.B) {
	eng, err := New(b.Context(), scaleRegistry(b, 1000), Options{})
	if err != nil {
		b.Fatal(err)
	}
	view := scaleView(1000)
	req := podCreate(b, 500, `{"hostNetwork":true,"priorityClassName":"system-node-critical","containers":[{"name":"c","securityContext":{"privileged":true},"resources":`+scale.PodResources+`}]}`)
	b.ReportAllocs()
	for b.Loop() {
		d, err := eng.Review(b.Context(), req, view)
		if err != nil || len(d.Deny) != 3 {
			b.Fatalf("decision %+v, %v", d, err)
		}
	}
}

// BenchmarkValidateCorpus is one validating decision on the load harness's
// mixed corpus (pods, Deployments, claims, Services, namespace creates,
// host-path pods) at 1,000 tenants, 10,000 namespaces and 50,000 pods.
func BenchmarkValidateCorpus(b *testing.B) {
	for _, evaluator := range []string{EvaluatorPlan, EvaluatorTopdown} {
		b.Run(evaluator, func(b *testing.B) {
			eng, err := New(b.Context(), scaleRegistry(b, 1000), Options{PolicyOptions: PolicyOptions{Evaluator: evaluator}})
			if err != nil {
				b.Fatal(err)
			}
			view := scaleView(1000)
			corpus := scale.Corpus(1000, 200)
			reqs := make([]*admission.Request, len(corpus))
			for i, c := range corpus {
				if reqs[i], err = admission.Decode(c.Body); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				d, err := eng.Validate(b.Context(), reqs[i], view)
				if err != nil || d.Allowed != corpus[i].Allowed {
					b.Fatalf("%s: decision %+v, %v", corpus[i].Kind, d, err)
				}
				i = (i + 1) % len(reqs)
			}
		})
	}
}

func TestParseDecisionReadsTheDecisionValue(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    *admission.Decision
		wantErr bool
	}{
		{"a clean decision", `{"allowed": true, "deny": [], "warn": [], "dryrun": []}`, &admission.Decision{Allowed: true, Deny: []admission.Violation{}, Warn: []admission.Violation{}, DryRun: []admission.Violation{}}, false},
		{"lists may be sets or missing", `{"allowed": true, "warn": {{"id": "x", "msg": "m"}}}`, &admission.Decision{Allowed: true, Warn: []admission.Violation{{ID: "x", Msg: "m"}}}, false},
		{"a denial makes it refused whatever allowed says", `{"allowed": true, "deny": [{"id": "host-network", "msg": "no"}]}`, &admission.Decision{Deny: []admission.Violation{{ID: "host-network", Msg: "no"}}}, false},
		{"allowed must be a boolean", `{"allowed": 1}`, nil, true},
		{"a violation's id must be a string", `{"allowed": false, "deny": [{"id": 1, "msg": "m"}]}`, nil, true},
		{"a list must be a list", `{"allowed": true, "deny": "no"}`, nil, true},
		{"the decision must be an object", `true`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDecision(ast.MustParseTerm(tt.value).Value)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "is not {allowed, deny, warn, dryrun}") {
					t.Fatalf("got %+v, %v; want the shape error", got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
