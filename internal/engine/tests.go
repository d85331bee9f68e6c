package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/irvm"
)

// testTimeout bounds a library's test run.
const testTimeout = time.Minute

// testRun runs a library's tests on one evaluator: every test's name and
// whether it passed, or an error when they could not run at all.
type testRun func(ctx context.Context, cat *catalog.Catalog) (map[string]bool, error)

// runTests runs the library's tests (*_test.rego, as `opa test` finds
// them) on an evaluator and fails, naming every test that did not pass,
// unless all pass. A library without tests passes.
func runTests(ctx context.Context, cat *catalog.Catalog, run testRun) error {
	if len(cat.Tests()) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	results, err := run(ctx, cat)
	if err != nil {
		return fmt.Errorf("policy tests: %w", err)
	}
	var failed []string
	for name, passed := range results {
		if !passed {
			failed = append(failed, name)
		}
	}
	if len(failed) > 0 {
		slices.Sort(failed)
		return fmt.Errorf("%d of %d policy tests failed: %s", len(failed), len(results), strings.Join(failed, ", "))
	}
	return nil
}

// testModules compiles the library's modules and tests for mode.
func testModules(cat *catalog.Catalog, mode ast.CompilerEvalMode) (*ast.Compiler, error) {
	all := make(map[string]string, len(cat.Modules())+len(cat.Tests()))
	for _, files := range []map[string]string{cat.Modules(), cat.Tests()} {
		for path, src := range files {
			all[path] = src
		}
	}
	return compile(all, mode)
}

// topdownTests runs the tests as `opa test` does, with OPA's test runner.
func topdownTests(ctx context.Context, cat *catalog.Catalog) (map[string]bool, error) {
	compiler, err := testModules(cat, ast.EvalModeTopdown)
	if err != nil {
		return nil, err
	}
	ch, err := tester.NewRunner().SetCompiler(compiler).SetTimeout(testTimeout).RaiseBuiltinErrors(true).RunTests(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for r := range ch {
		if !r.Skip {
			out[fmt.Sprintf("%s.%s (%s)", strings.TrimPrefix(r.Package, "data."), r.Name, r.Location)] = r.Pass()
		}
	}
	return out, nil
}

// planTests runs the tests on the plan evaluator: one plan that evaluates
// every test, {NAME: {true | data.PKG.TEST}}, whose set is empty for a test
// that fails, with no input and no data, as `opa test` runs them.
func planTests(ctx context.Context, cat *catalog.Catalog) (map[string]bool, error) {
	compiler, err := testModules(cat, ast.EvalModeIR)
	if err != nil {
		return nil, err
	}
	tests := map[string]*ast.Rule{}
	for _, m := range compiler.Modules {
		for _, r := range m.Rules {
			name := r.Head.Name.String()
			if strings.HasPrefix(name, tester.TestPrefix) && len(r.Head.Args) == 0 {
				key := fmt.Sprintf("%s.%s", strings.TrimPrefix(m.Package.Path.String(), "data."), name)
				if _, seen := tests[key]; !seen {
					tests[key] = r
				}
			}
		}
	}
	if len(tests) == 0 {
		return map[string]bool{}, nil
	}
	names := make([]string, 0, len(tests))
	items := make([]string, 0, len(tests))
	for key := range tests {
		names = append(names, key)
	}
	slices.Sort(names)
	for _, key := range names {
		items = append(items, fmt.Sprintf("%q: {true | data.%s}", key, key))
	}
	policy, err := irvm.Plan(ctx, compiler, "results := {"+strings.Join(items, ", ")+"}")
	if err != nil {
		return nil, fmt.Errorf("planning the tests: %w", err)
	}
	program, err := irvm.New(policy)
	if err != nil {
		return nil, fmt.Errorf("planning the tests: %w", err)
	}
	v, err := program.Value(ctx, nil, ast.ObjectTerm())
	if err != nil {
		return nil, err
	}
	results, ok := v.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("the tests' plan answered %v", v)
	}
	out := make(map[string]bool, len(names))
	for _, key := range names {
		r := tests[key]
		var set ast.Set
		if t := results.Get(ast.StringTerm(key)); t != nil {
			set, _ = t.Value.(ast.Set)
		}
		out[fmt.Sprintf("%s (%s)", key, r.Location)] = set != nil && set.Len() > 0
	}
	return out, nil
}
