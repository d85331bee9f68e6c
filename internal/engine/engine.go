package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/irvm"
	"github.com/tenantguard/tenantguard/internal/jsonast"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// DefaultManager is the user name tenantguard's server runs as in the Helm
// chart; companion resources may be changed by it.
const DefaultManager = "system:serviceaccount:tenantguard-system:tenantguard"

// The queries the engine asks of the rule library.
const (
	MutationsQuery = "data.tenantguard.main.mutations"
	DecisionQuery  = "data.tenantguard.main.decision"
)

// Options configure an Engine: the policy it runs (PolicyOptions) and how.
type Options struct {
	PolicyOptions
	// Managers are the user names of tenantguard itself; DefaultManager when empty.
	Managers []string
	// Pool runs topdown's evaluations; nil runs them on the caller's
	// goroutine. The plan evaluator always runs them there: it needs less
	// than 32 KiB of stack, and handing an evaluation to another goroutine
	// costs more than the bound is worth (see Pool).
	Pool *Pool
}

// PolicyOptions configure Compile.
type PolicyOptions struct {
	// Catalog is the rule library; nil is the embedded one.
	Catalog *catalog.Catalog
	// Evaluator runs the rules: EvaluatorAuto (the default), EvaluatorPlan
	// or EvaluatorTopdown.
	Evaluator string
	// Test runs the library's own tests (*_test.rego) on the evaluator that
	// will serve it, and refuses the library unless they all pass.
	Test bool
}

// The evaluators that run the rules.
const (
	// EvaluatorAuto runs OPA's plan of the rules when the evaluator accepts
	// it, and topdown otherwise.
	EvaluatorAuto = "auto"
	// EvaluatorPlan runs OPA's plan of the rules (package irvm) and refuses
	// a policy it cannot run.
	EvaluatorPlan = "plan"
	// EvaluatorTopdown runs the rules with OPA's topdown evaluator.
	EvaluatorTopdown = "topdown"
)

// Evaluators are the Evaluator values, for flags and their help.
var Evaluators = []string{EvaluatorAuto, EvaluatorPlan, EvaluatorTopdown}

// Policy is a compiled rule library, ready to decide with any registry: its
// catalog, and its queries compiled for the evaluator that runs them. It is
// immutable and safe for concurrent use.
type Policy struct {
	catalog *catalog.Catalog
	// evaluator is the evaluator in use, and why when auto fell back.
	evaluator string
	// compiler compiled the library for topdown, which keeps using it; nil
	// with the plan evaluator, which needs only the programs and rules.
	compiler *ast.Compiler
	// rules are where the library defines rules, which the registry's data
	// must not hold (readData); set with the plan evaluator only, as topdown
	// checks its store itself.
	rules ruleDocuments
	// mutate and decide are the plan of each query, nil with topdown.
	mutate, decide *irvm.Program
	// catalogData is data.tenantguard.catalog, the same for every registry.
	catalogData ast.Value
}

// Compile compiles a rule library for the evaluator the options ask for,
// with the capabilities a tenantguard policy has (catalog.Capabilities).
// EvaluatorAuto takes the plan evaluator when it accepts the library (and,
// with Test, its tests) and topdown otherwise. With Test the library's
// tests run on the evaluator chosen, and one that fails refuses the library.
func Compile(ctx context.Context, opts PolicyOptions) (*Policy, error) {
	cat := opts.Catalog
	if cat == nil {
		var err error
		if cat, err = catalog.Embedded(); err != nil {
			return nil, err
		}
	}
	catalogData, err := ast.InterfaceToValue(cat.Data())
	if err != nil {
		return nil, fmt.Errorf("converting the catalog: %w", err)
	}
	// settled now: every engine of the policy shares it
	p := &Policy{catalog: cat, catalogData: jsonast.Settle(catalogData)}
	switch opts.Evaluator {
	case "", EvaluatorAuto:
		if err := p.plan(ctx, opts.Test); err != nil {
			p.evaluator = EvaluatorTopdown + " (the plan evaluator refused the policy: " + err.Error() + ")"
			return p, p.topdown(ctx, opts.Test)
		}
	case EvaluatorPlan:
		if err := p.plan(ctx, opts.Test); err != nil {
			return nil, fmt.Errorf("the plan evaluator refused the policy: %w", err)
		}
	case EvaluatorTopdown:
		return p, p.topdown(ctx, opts.Test)
	default:
		return nil, fmt.Errorf("unknown evaluator %q; use one of %v", opts.Evaluator, Evaluators)
	}
	return p, nil
}

// topdown compiles the library for OPA's topdown evaluator.
func (p *Policy) topdown(ctx context.Context, test bool) error {
	p.evaluator = cmp.Or(p.evaluator, EvaluatorTopdown)
	p.mutate, p.decide = nil, nil
	compiler, err := compile(p.catalog.Modules(), ast.EvalModeTopdown)
	if err != nil {
		return err
	}
	p.compiler = compiler
	if test {
		return runTests(ctx, p.catalog, topdownTests)
	}
	return nil
}

// plan has OPA plan the queries and readies them for the plan evaluator.
func (p *Policy) plan(ctx context.Context, test bool) error {
	compiler, err := compile(p.catalog.Modules(), ast.EvalModeIR)
	if err != nil {
		return err
	}
	programs := map[string]*irvm.Program{}
	for _, q := range []string{MutationsQuery, DecisionQuery} {
		policy, err := irvm.Plan(ctx, compiler, q)
		if err != nil {
			return fmt.Errorf("planning %s: %w", q, err)
		}
		if programs[q], err = irvm.New(policy); err != nil {
			return fmt.Errorf("planning %s: %w", q, err)
		}
	}
	if test {
		if err := runTests(ctx, p.catalog, planTests); err != nil {
			return err
		}
	}
	// The compiler is not kept: its modules and rule tree are most of a
	// compiled library's heap, which every collection would scan again.
	p.rules, p.mutate, p.decide = ruleDocumentsOf(compiler), programs[MutationsQuery], programs[DecisionQuery]
	p.evaluator = EvaluatorPlan
	return nil
}

// Evaluator is the evaluator the policy runs with, and, when it fell back
// to topdown, why.
func (p *Policy) Evaluator() string { return p.evaluator }

// Catalog is the policy's rule library.
func (p *Policy) Catalog() *catalog.Catalog { return p.catalog }

// Engine decides admission requests for one registry and one policy. It is
// immutable and safe for concurrent use; a new registry or policy is a new Engine.
type Engine struct {
	registry *registry.Snapshot
	policy   *Policy
	// pool runs the evaluations of topdown; nil with the plan evaluator
	pool   *Pool
	mutate query
	decide query
	// collisions is set when some tenant refuses hosts others serve: the
	// Ingresses and routes of tenant namespaces then hold their hosts.
	collisions bool
	// resources is set when some tenant has a tenant-wide resource quota:
	// the pods and claims of tenant namespaces then hold what they add.
	resources bool
	// usages remembers pods' usage by their shape.
	usages *usageMemo
}

// New compiles the rule library and readies it for the registry: Compile,
// then Policy.Engine.
func New(ctx context.Context, reg *registry.Snapshot, opts Options) (*Engine, error) {
	p, err := Compile(ctx, opts.PolicyOptions)
	if err != nil {
		return nil, err
	}
	return p.Engine(ctx, reg, opts.Managers, opts.Pool)
}

// Engine readies the policy for a registry: the registry, the catalog's
// data (data.tenantguard.catalog) and tenantguard's user names (managers;
// DefaultManager when empty) as the data the rules read. The registry's
// enforcement must name only the policy's rules. pool runs topdown's
// evaluations (see Options.Pool).
func (p *Policy) Engine(ctx context.Context, reg *registry.Snapshot, managers []string, pool *Pool) (*Engine, error) {
	if err := reg.CheckRules(p.catalog.IDs()); err != nil {
		return nil, err
	}
	if len(managers) == 0 {
		managers = []string{DefaultManager}
	}
	managerSet := map[string]any{}
	for _, m := range managers {
		managerSet[m] = true
	}
	registryValue, err := sharedValue(reg.Data())
	if err != nil {
		return nil, fmt.Errorf("converting the registry: %w", err)
	}
	store := inmem.NewFromObjectWithOpts(map[string]any{"tenantguard": map[string]any{
		"registry": registryValue,
		"catalog":  p.catalogData,
		"runtime":  map[string]any{"managers": managerSet},
	}}, inmem.OptReturnASTValuesOnRead(true)) // read as AST values: no conversion per evaluation
	e := &Engine{registry: reg, policy: p, collisions: reg.HostnameCollisions(), resources: reg.ResourceQuotas(), usages: &usageMemo{}}
	if p.decide == nil {
		e.pool = pool
		return e, e.topdown(ctx, store)
	}
	dataValue, err := readData(ctx, p.rules, store)
	if err != nil {
		return nil, err
	}
	// Every evaluation running at once reads it: settled first.
	dataTerm := ast.NewTerm(jsonast.Settle(dataValue))
	e.mutate = planQuery{p.mutate, dataTerm}
	e.decide = planQuery{p.decide, dataTerm}
	return e, nil
}

// topdown prepares the queries for OPA's topdown evaluator.
func (e *Engine) topdown(ctx context.Context, store storage.Store) error {
	prepared := map[string]rego.PreparedEvalQuery{}
	for _, q := range []string{MutationsQuery, DecisionQuery} {
		pq, err := rego.New(rego.Query(q), rego.Compiler(e.policy.compiler), rego.Store(store)).PrepareForEval(ctx)
		if err != nil {
			return fmt.Errorf("preparing %s: %w", q, err)
		}
		prepared[q] = pq
	}
	// Never committed nor aborted: it holds the store's read lock for the
	// engine's life, so the store must never be written. Sharing it relies
	// on inmem's read transactions being read-only snapshots of the data.
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return fmt.Errorf("reading the registry: %w", err)
	}
	e.mutate = topdownQuery{prepared[MutationsQuery], txn}
	e.decide = topdownQuery{prepared[DecisionQuery], txn}
	return nil
}

// readData reads the store's data as one value, and refuses rules defined
// at paths the store has data at: topdown does so when it prepares a query
// with the store, and the planner never sees the store.
func readData(ctx context.Context, rules ruleDocuments, store storage.Store) (ast.Value, error) {
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the registry: %w", err)
	}
	defer store.Abort(ctx, txn)
	if err := rules.conflicts(storage.NonEmpty(ctx, store, txn)); err != nil {
		return nil, err
	}
	data, err := store.Read(ctx, txn, storage.RootPath)
	if err != nil {
		return nil, fmt.Errorf("reading the registry: %w", err)
	}
	// The store returns AST values (OptReturnASTValuesOnRead): no conversion.
	return ast.InterfaceToValue(data)
}

// Evaluator is the evaluator the engine runs the rules with, and, when it
// fell back to topdown, why.
func (e *Engine) Evaluator() string { return e.policy.evaluator }

// Policy is the policy the engine runs.
func (e *Engine) Policy() *Policy { return e.policy }

// compile parses and compiles Rego v1 modules for one evaluation mode
// (OPA's planner needs a compiler made for it, ast.EvalModeIR), with a
// policy's capabilities, reporting every error.
func compile(modules map[string]string, mode ast.CompilerEvalMode) (*ast.Compiler, error) {
	parsed := make(map[string]*ast.Module, len(modules))
	paths := make([]string, 0, len(modules))
	for path := range modules {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	for _, path := range paths {
		m, err := catalog.ParseModule(path, modules[path])
		if err != nil {
			return nil, fmt.Errorf("parsing rules: %w", err)
		}
		parsed[path] = m
	}
	compiler := ast.NewCompiler().WithStrict(true).WithEvalMode(mode).WithCapabilities(catalog.Capabilities())
	if compiler.Compile(parsed); compiler.Failed() {
		return nil, fmt.Errorf("compiling rules: %w", compiler.Errors)
	}
	return compiler, nil
}

// Registry is the registry the engine enforces.
func (e *Engine) Registry() *registry.Snapshot { return e.registry }
