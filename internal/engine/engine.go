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

	"github.com/tenantguard/tenantguard/internal/irvm"
	"github.com/tenantguard/tenantguard/internal/jsonast"
	"github.com/tenantguard/tenantguard/internal/registry"
	policy "github.com/tenantguard/tenantguard/rego"
)

// DefaultManager is the user name tenantguard's server runs as in the Helm
// chart; companion resources may be changed by it.
const DefaultManager = "system:serviceaccount:tenantguard-system:tenantguard"

// The queries the engine asks of the rule library.
const (
	MutationsQuery = "data.tenantguard.main.mutations"
	DecisionQuery  = "data.tenantguard.main.decision"
)

// Options configure an Engine.
type Options struct {
	// Modules replaces the embedded rule library (path -> Rego source).
	Modules map[string]string
	// Managers are the user names of tenantguard itself; DefaultManager when empty.
	Managers []string
	// Pool runs topdown's evaluations; nil runs them on the caller's
	// goroutine. The plan evaluator always runs them there: it needs less
	// than 32 KiB of stack, and handing an evaluation to another goroutine
	// costs more than the bound is worth (see Pool).
	Pool *Pool
	// Evaluator runs the rules: EvaluatorAuto (the default), EvaluatorPlan
	// or EvaluatorTopdown.
	Evaluator string
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

// Engine decides admission requests for one registry and one policy. It is
// immutable and safe for concurrent use; a new registry or policy is a new Engine.
type Engine struct {
	registry *registry.Snapshot
	// pool runs the evaluations of topdown; nil with the plan evaluator
	pool *Pool
	// evaluator is the evaluator in use, and why when auto fell back.
	evaluator string
	mutate    query
	decide    query
}

// New compiles the rule library and loads the registry into the OPA store.
func New(ctx context.Context, reg *registry.Snapshot, opts Options) (*Engine, error) {
	modules := opts.Modules
	if modules == nil {
		var err error
		if modules, err = policy.Modules(policy.FS()); err != nil {
			return nil, fmt.Errorf("reading the embedded rules: %w", err)
		}
	}
	compiler, err := Compile(modules)
	if err != nil {
		return nil, err
	}
	managers := opts.Managers
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
		"runtime":  map[string]any{"managers": managerSet},
	}}, inmem.OptReturnASTValuesOnRead(true)) // read as AST values: no conversion per evaluation
	e := &Engine{registry: reg, pool: opts.Pool}
	switch opts.Evaluator {
	case "", EvaluatorAuto:
		if err := e.plan(ctx, modules, store); err != nil {
			e.evaluator = EvaluatorTopdown + " (the plan evaluator refused the policy: " + err.Error() + ")"
			return e, e.topdown(ctx, compiler, store)
		}
	case EvaluatorPlan:
		if err := e.plan(ctx, modules, store); err != nil {
			return nil, fmt.Errorf("the plan evaluator refused the policy: %w", err)
		}
	case EvaluatorTopdown:
		return e, e.topdown(ctx, compiler, store)
	default:
		return nil, fmt.Errorf("unknown evaluator %q; use one of %v", opts.Evaluator, Evaluators)
	}
	return e, nil
}

// topdown prepares the queries for OPA's topdown evaluator.
func (e *Engine) topdown(ctx context.Context, compiler *ast.Compiler, store storage.Store) error {
	e.evaluator = cmp.Or(e.evaluator, EvaluatorTopdown)
	prepared := map[string]rego.PreparedEvalQuery{}
	for _, q := range []string{MutationsQuery, DecisionQuery} {
		pq, err := rego.New(rego.Query(q), rego.Compiler(compiler), rego.Store(store)).PrepareForEval(ctx)
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

// plan has OPA plan the queries and readies them for the plan evaluator,
// with the store's data as one value.
func (e *Engine) plan(ctx context.Context, modules map[string]string, store storage.Store) error {
	compiler, err := compile(modules, ast.EvalModeIR)
	if err != nil {
		return err
	}
	dataValue, err := readData(ctx, compiler, store)
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
	// Every evaluation running at once reads it: settled first.
	dataTerm := ast.NewTerm(jsonast.Settle(dataValue))
	e.mutate = planQuery{programs[MutationsQuery], dataTerm}
	e.decide = planQuery{programs[DecisionQuery], dataTerm}
	e.evaluator = EvaluatorPlan
	e.pool = nil // see Options.Pool
	return nil
}

// readData reads the store's data as one value, and refuses rules defined
// at paths the store has data at: topdown does so when it prepares a query
// with the store, and the planner never sees the store.
func readData(ctx context.Context, compiler *ast.Compiler, store storage.Store) (ast.Value, error) {
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the registry: %w", err)
	}
	defer store.Abort(ctx, txn)
	if errs := ast.CheckPathConflicts(compiler, storage.NonEmpty(ctx, store, txn)); len(errs) > 0 {
		return nil, errs
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
func (e *Engine) Evaluator() string { return e.evaluator }

// Compile parses and compiles Rego v1 modules, reporting every error.
func Compile(modules map[string]string) (*ast.Compiler, error) {
	return compile(modules, ast.EvalModeTopdown)
}

// compile compiles for one evaluation mode: OPA's planner needs a compiler
// made for it (ast.EvalModeIR).
func compile(modules map[string]string, mode ast.CompilerEvalMode) (*ast.Compiler, error) {
	parsed := make(map[string]*ast.Module, len(modules))
	paths := make([]string, 0, len(modules))
	for path := range modules {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	for _, path := range paths {
		m, err := ast.ParseModuleWithOpts(path, modules[path], ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, fmt.Errorf("parsing rules: %w", err)
		}
		parsed[path] = m
	}
	compiler := ast.NewCompiler().WithStrict(true).WithEvalMode(mode)
	if compiler.Compile(parsed); compiler.Failed() {
		return nil, fmt.Errorf("compiling rules: %w", compiler.Errors)
	}
	return compiler, nil
}

// Registry is the registry the engine enforces.
func (e *Engine) Registry() *registry.Snapshot { return e.registry }
