package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

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
	// Pool runs the evaluations; nil runs them on the caller's goroutine.
	Pool *Pool
}

// Engine decides admission requests for one registry and one policy. It is
// immutable and safe for concurrent use; a new registry or policy is a new Engine.
type Engine struct {
	registry *registry.Snapshot
	pool     *Pool
	// txn is one read transaction on the engine's store, shared by every
	// evaluation: the store is never written after New, so nothing is
	// gained by opening (and locking) one per request.
	txn    storage.Transaction
	mutate rego.PreparedEvalQuery
	decide rego.PreparedEvalQuery
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
	store := inmem.NewFromObjectWithOpts(map[string]any{"tenantguard": map[string]any{
		"registry": reg.Data(),
		"runtime":  map[string]any{"managers": managerSet},
	}}, inmem.OptReturnASTValuesOnRead(true)) // read as AST values: no conversion per evaluation
	e := &Engine{registry: reg, pool: opts.Pool}
	for query, into := range map[string]*rego.PreparedEvalQuery{MutationsQuery: &e.mutate, DecisionQuery: &e.decide} {
		prepared, err := rego.New(rego.Query(query), rego.Compiler(compiler), rego.Store(store)).PrepareForEval(ctx)
		if err != nil {
			return nil, fmt.Errorf("preparing %s: %w", query, err)
		}
		*into = prepared
	}
	// Never committed nor aborted: it holds the store's read lock for the
	// engine's life, so the store must never be written. Sharing it relies
	// on inmem's read transactions being read-only snapshots of the data.
	if e.txn, err = store.NewTransaction(ctx); err != nil {
		return nil, fmt.Errorf("reading the registry: %w", err)
	}
	return e, nil
}

// Compile parses and compiles Rego v1 modules, reporting every error.
func Compile(modules map[string]string) (*ast.Compiler, error) {
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
	compiler := ast.NewCompiler().WithStrict(true)
	if compiler.Compile(parsed); compiler.Failed() {
		return nil, fmt.Errorf("compiling rules: %w", compiler.Errors)
	}
	return compiler, nil
}

// Registry is the registry the engine enforces.
func (e *Engine) Registry() *registry.Snapshot { return e.registry }
