package engine

import (
	"context"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"

	"github.com/tenantguard/tenantguard/internal/irvm"
)

// query is one of the engine's prepared queries, run by either evaluator:
// the value of its single result, nil when it is undefined.
type query interface {
	eval(ctx context.Context, input ast.Value) (ast.Value, error)
}

// planQuery runs OPA's plan of a query (package irvm) on the registry's
// data as one value.
type planQuery struct {
	program *irvm.Program
	data    *ast.Term
}

func (q planQuery) eval(ctx context.Context, input ast.Value) (ast.Value, error) {
	return q.program.Value(ctx, ast.NewTerm(input), q.data)
}

// topdownQuery runs a query with OPA's topdown evaluator.
type topdownQuery struct {
	prepared rego.PreparedEvalQuery
	// txn is one read transaction on the engine's store, shared by every
	// evaluation: the store is never written after New, so nothing is
	// gained by opening (and locking) one per request.
	txn storage.Transaction
}

// noMetrics spares each evaluation the timers and counters nobody reads.
var noMetrics = metrics.NoOp()

func (q topdownQuery) eval(ctx context.Context, input ast.Value) (ast.Value, error) {
	rs, err := q.prepared.Eval(ctx, rego.EvalParsedInput(input), rego.EvalTransaction(q.txn),
		rego.EvalMetrics(noMetrics), rego.EvalGenerateJSON(asValue))
	if err != nil || len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, err
	}
	v, _ := rs[0].Expressions[0].Value.(ast.Value)
	return v, nil
}

// asValue keeps a query's result as the OPA value it is, read without
// converting it to Go values and JSON first.
func asValue(t *ast.Term, _ *rego.EvalContext) (any, error) { return t.Value, nil }
