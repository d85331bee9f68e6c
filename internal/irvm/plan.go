package irvm

import (
	"context"
	"errors"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/ir"
	"github.com/open-policy-agent/opa/v1/rego"
)

// target is the rego target under which the planner's output is captured.
const target = "tenantguard-irvm"

var registerOnce sync.Once

// capturePlugin hands the plan OPA prepares for target to the Plan call
// that asked for it, through the context.
type capturePlugin struct{}

type sinkKey struct{}

func (capturePlugin) IsTarget(t string) bool { return t == target }

func (capturePlugin) PrepareForEval(ctx context.Context, policy *ir.Policy, _ ...rego.PrepareOption) (rego.TargetPluginEval, error) {
	sink, ok := ctx.Value(sinkKey{}).(**ir.Policy)
	if !ok {
		return nil, errors.New("the irvm target only plans, through irvm.Plan")
	}
	*sink = policy
	return unusable{}, nil
}

// unusable is the evaluator rego keeps for the target; Plan never evaluates.
type unusable struct{}

func (unusable) Eval(context.Context, *rego.EvalContext, ast.Value) (ast.Value, error) {
	return nil, errors.New("the irvm target only plans, through irvm.Plan")
}

// Plan has OPA's planner turn query over the compiled modules into a plan.
// The compiler must have been built with ast.EvalModeIR (which skips the
// rule indices the planner does not use) and is not modified.
func Plan(ctx context.Context, compiler *ast.Compiler, query string) (*ir.Policy, error) {
	registerOnce.Do(func() { rego.RegisterPlugin(target, capturePlugin{}) })
	var policy *ir.Policy
	ctx = context.WithValue(ctx, sinkKey{}, &policy)
	if _, err := rego.New(rego.Query(query), rego.Compiler(compiler), rego.Target(target)).PrepareForEval(ctx); err != nil {
		return nil, err
	}
	if policy == nil {
		return nil, errors.New("OPA did not plan the query")
	}
	return policy, nil
}
