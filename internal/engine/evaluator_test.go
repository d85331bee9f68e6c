package engine

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/tests/scale"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// evaluatorPair is one registry's engine on each evaluator.
type evaluatorPair struct{ plan, topdown *Engine }

func newPair(tb testing.TB, snap *registry.Snapshot) evaluatorPair {
	tb.Helper()
	var p evaluatorPair
	for evaluator, into := range map[string]**Engine{EvaluatorPlan: &p.plan, EvaluatorTopdown: &p.topdown} {
		e, err := New(tb.Context(), snap, Options{PolicyOptions: PolicyOptions{Evaluator: evaluator}})
		if err != nil {
			tb.Fatalf("%s: %v", evaluator, err)
		}
		*into = e
	}
	return p
}

// same reviews, validates and mutates a request with both evaluators and
// fails unless every answer is the same: decisions with their messages in
// order, patches byte for byte, errors alike.
func (p evaluatorPair) same(tb testing.TB, ctx context.Context, req *admission.Request, view *clusterview.View) {
	tb.Helper()
	steps := []struct {
		name string
		run  func(*Engine) (any, error)
	}{
		{"review", func(e *Engine) (any, error) { return e.Review(ctx, req, view) }},
		{"validate", func(e *Engine) (any, error) { return e.Validate(ctx, req, view) }},
		{"mutate", func(e *Engine) (any, error) { return e.Mutate(ctx, req, view) }},
	}
	for _, step := range steps {
		planned, perr := step.run(p.plan)
		walked, terr := step.run(p.topdown)
		if (perr == nil) != (terr == nil) {
			tb.Fatalf("%s: the plan's error is %v, topdown's %v", step.name, perr, terr)
		}
		if !reflect.DeepEqual(planned, walked) {
			tb.Fatalf("%s of %s %s/%s:\n plan    %+v\n topdown %+v", step.name, req.Operation, req.Namespace, req.Name, planned, walked)
		}
	}
}

func TestThePlanEvaluatorDecidesEveryCorpusCaseAsTopdown(t *testing.T) {
	cases, err := fixtures.Load()
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := clusterview.LoadFile(fixtures.ClusterFile())
	if err != nil {
		t.Fatal(err)
	}
	pairs := map[string]evaluatorPair{}
	for i := range cases {
		c := &cases[i]
		t.Run(c.Name, func(t *testing.T) {
			body, err := c.Review()
			if err != nil {
				t.Fatal(err)
			}
			req, err := admission.Decode(body)
			if err != nil {
				t.Skipf("not decodable (%v): no evaluator sees it", err)
			}
			pair, ok := pairs[c.RegistryFile()]
			if !ok {
				snap, err := registry.Load(c.RegistryFile())
				if err != nil {
					t.Fatal(err)
				}
				pair = newPair(t, snap)
				pairs[c.RegistryFile()] = pair
			}
			extra, err := c.ExtraObjects()
			if err != nil {
				t.Fatal(err)
			}
			pair.same(t, t.Context(), req, fixtureView(t, pair.plan.Registry().TenantLabel(), slices.Concat(cluster, extra)))
		})
	}
}

func TestThePlanEvaluatorDecidesTheScaleCorpusAsTopdown(t *testing.T) {
	pair := newPair(t, scaleRegistry(t, 100))
	view := scaleView(100)
	for _, c := range scale.Corpus(100, 400) {
		req, err := admission.Decode(c.Body)
		if err != nil {
			t.Fatal(err)
		}
		pair.same(t, t.Context(), req, view)
	}
}

func TestTheEvaluatorOption(t *testing.T) {
	snap := scaleRegistry(t, 3)
	// OPA's planner cannot plan a rule that reads rules of its own prefix.
	brokenForThePlan := map[string]string{"p.rego": `package tenantguard.main

mutations := []

extra[k] := v if some k, v in {"a": 1}

extra.b := extra.a + 1

decision := {"allowed": extra.b == 2, "deny": [], "warn": [], "dryrun": []}
`}
	tests := []struct {
		name      string
		opts      Options
		want      string
		wantError string
	}{
		{name: "the default runs the plan", opts: Options{}, want: EvaluatorPlan},
		{name: "auto runs the plan", opts: Options{PolicyOptions: PolicyOptions{Evaluator: EvaluatorAuto}}, want: EvaluatorPlan},
		{name: "topdown runs topdown", opts: Options{PolicyOptions: PolicyOptions{Evaluator: EvaluatorTopdown}}, want: EvaluatorTopdown},
		{name: "auto falls back to topdown and says why", opts: Options{PolicyOptions: library(t, brokenForThePlan)}, want: "topdown (the plan evaluator refused the policy: planning data.tenantguard.main.decision: p.rego:7: reference to data.tenantguard.main.extra is not supported: rules sharing that path prefix are planned as a single function)"},
		{name: "plan refuses what it cannot run", opts: Options{PolicyOptions: withEvaluator(library(t, brokenForThePlan), EvaluatorPlan)}, wantError: "the plan evaluator refused the policy: planning data.tenantguard.main.decision: p.rego:7"},
		{name: "plan refuses rules at the registry's paths, as topdown does", opts: Options{PolicyOptions: withEvaluator(library(t, map[string]string{
			"r.rego": "package tenantguard.registry\n\ntenants := []\n",
		}), EvaluatorPlan)}, wantError: "conflicting rule"},
		{name: "an unknown evaluator is refused", opts: Options{PolicyOptions: PolicyOptions{Evaluator: "wasm"}}, wantError: `unknown evaluator "wasm"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(t.Context(), snap, tt.opts)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := e.Evaluator(); got != tt.want {
				t.Fatalf("evaluator %q, want %q", got, tt.want)
			}
			if _, err := e.Review(t.Context(), podCreate(t, 1, podSpec), scaleView(3)); err != nil {
				t.Fatalf("the engine does not decide: %v", err)
			}
		})
	}
}

// FuzzThePlanEvaluatorDecidesAsTopdown runs arbitrary AdmissionReviews,
// seeded with the shared corpus, through both evaluators on the enforcement
// registry (which sets every mode) and fails on any difference.
func FuzzThePlanEvaluatorDecidesAsTopdown(f *testing.F) {
	seeds, err := fixtures.Reviews()
	if err != nil {
		f.Fatal(err)
	}
	for _, body := range seeds {
		f.Add(body)
	}
	snap, err := registry.Load(fixtures.Dir() + "/registry-enforcement.yaml")
	if err != nil {
		f.Fatal(err)
	}
	pair := newPair(f, snap)
	objects, err := clusterview.LoadFile(fixtures.ClusterFile())
	if err != nil {
		f.Fatal(err)
	}
	view := fixtureView(f, snap.TenantLabel(), objects)
	f.Fuzz(func(t *testing.T, body []byte) {
		if req, ok := decodeFuzzed(t, body); ok {
			pair.same(t, t.Context(), req, view)
		}
	})
}

func TestTheLibrarysTestsRunOnEitherEvaluator(t *testing.T) {
	embedded := catalog.MustEmbedded()
	failing := library(t, map[string]string{
		"p.rego":      "package tenantguard.main\n\nmutations := []\n\ndecision := {\"allowed\": input.ok, \"deny\": [], \"warn\": [], \"dryrun\": []}\n",
		"p_test.rego": "package tenantguard.main_test\n\nimport data.tenantguard.main\n\ntest_ok if main.decision.allowed with input as {\"ok\": true}\n\ntest_wrong if main.decision.allowed with input as {\"ok\": false}\n",
	}).Catalog
	for name, run := range map[string]testRun{EvaluatorPlan: planTests, EvaluatorTopdown: topdownTests} {
		t.Run(name, func(t *testing.T) {
			results, err := run(t.Context(), embedded)
			if err != nil {
				t.Fatal(err)
			}
			var failed []string
			for test, passed := range results {
				if !passed {
					failed = append(failed, test)
				}
			}
			if len(results) < 100 || len(failed) > 0 {
				t.Errorf("%d tests of the embedded library ran, these failed: %v", len(results), failed)
			}
			err = runTests(t.Context(), failing, run)
			if err == nil || !strings.Contains(err.Error(), "1 of 2 policy tests failed: tenantguard.main_test.test_wrong (p_test.rego:7)") {
				t.Errorf("a failing test: %v", err)
			}
		})
	}
}
