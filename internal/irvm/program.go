package irvm

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/ir"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Program is a plan made ready to run: functions and built-ins resolved,
// string constants made values. It is immutable and safe for concurrent use.
type Program struct {
	strings []*ast.Term
	// numbers are the string constants MakeNumberRefStmt reads, as numbers
	// parsed once; nil for the others.
	numbers []*ast.Term
	// dynamic are the functions of rules by their path, for
	// CallDynamicStmt.
	dynamic *pathNode
	// memoized counts the functions computed at most once per evaluation.
	memoized int
	// folded are the literals folded into constants, which the code
	// shares between evaluations (fold.go).
	folded []*constant
	// locals is the frame size of the plan itself.
	locals int
	// code is the plan's blocks compiled.
	code []code
	// pool keeps evaluations' state for reuse.
	pool sync.Pool
}

// function is one planned function: a rule, or a Rego function.
type function struct {
	name   string
	params []ir.Local
	ret    ir.Local
	// blocks are the function's statements, until New has compiled them
	// into code.
	blocks []*ir.Block
	// code is blocks compiled.
	code   []code
	locals int
	// memo is the function's slot in an evaluation's memo, -1 when it has
	// arguments besides input and data and is not memoized.
	memo int
}

// pathNode is one step of the tree of functions by path.
type pathNode struct {
	fn       *function
	children map[string]*pathNode
}

func (n *pathNode) add(path []string, fn *function) {
	for _, step := range path {
		child := n.children[step]
		if child == nil {
			child = &pathNode{}
			if n.children == nil {
				n.children = map[string]*pathNode{}
			}
			n.children[step] = child
		}
		n = child
	}
	n.fn = fn
}

// callee is what a call statement calls: a planned function or a built-in.
type callee struct {
	fn      *function
	builtin topdown.BuiltinFunc
	name    string
	// void built-ins have no result: the call is always defined.
	void bool
	// relation built-ins (walk) give every output: the call's result is
	// the array of them, which the plan scans.
	relation bool
}

// New readies a plan for evaluation. It refuses a plan with more or fewer
// than one query plan, a statement it does not know, or a built-in
// topdown does not implement (a custom rego.Function, say): such policies
// stay on topdown. New takes the policy over: each call statement is
// replaced, in place, by one that carries its resolved target.
func New(policy *ir.Policy) (*Program, error) {
	if policy.Plans == nil || len(policy.Plans.Plans) != 1 {
		return nil, fmt.Errorf("the policy has %d query plans, not 1", countPlans(policy))
	}
	plan := policy.Plans.Plans[0]
	p := &Program{dynamic: &pathNode{}}
	if policy.Static != nil {
		p.strings = make([]*ast.Term, len(policy.Static.Strings))
		p.numbers = make([]*ast.Term, len(policy.Static.Strings))
		for i, s := range policy.Static.Strings {
			// The interned term where OPA has one: a key the decoders
			// intern is then matched in an object by its pointer
			// (object.Get compares pointers before strings).
			p.strings[i] = ast.InternedTerm(s.Value)
		}
	}
	byName := map[string]*function{}
	if policy.Funcs != nil {
		for _, f := range policy.Funcs.Funcs {
			fn := &function{name: f.Name, params: f.Params, ret: f.Return, blocks: f.Blocks, memo: -1}
			if len(f.Params) == 2 {
				fn.memo = p.memoized
				p.memoized++
			}
			byName[f.Name] = fn
			if f.Path != nil {
				p.dynamic.add(f.Path, fn)
			}
		}
	}
	builtins := map[string]*ir.BuiltinFunc{}
	if policy.Static != nil {
		for _, b := range policy.Static.BuiltinFuncs {
			builtins[b.Name] = b
		}
	}
	r := resolver{p: p, byName: byName, builtins: builtins}
	for _, fn := range byName {
		size, err := r.blocks(fn.blocks, maxLocal(fn.params, fn.ret))
		if err != nil {
			return nil, fmt.Errorf("function %s: %w", fn.name, err)
		}
		fn.locals = size + 1
	}
	size, err := r.blocks(plan.Blocks, int(ir.Data))
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", plan.Name, err)
	}
	p.locals = size + 1
	fns := slices.Collect(maps.Values(byName))
	p.fold(plan.Blocks)
	for _, fn := range fns {
		p.fold(fn.blocks)
	}
	// after folding: the statements that built a literal add to nothing
	// any more
	mutable := mutability(plan.Blocks, fns)
	share(plan.Blocks, mutable[nil])
	for _, fn := range fns {
		share(fn.blocks, mutable[fn])
	}
	c := compiler{p}
	p.code = c.blocks(plan.Blocks)
	for _, fn := range fns {
		fn.code = c.blocks(fn.blocks)
	}
	// The compiled code is all an evaluation runs: the statements it was
	// compiled from, megabytes for the library that would live as long as
	// the program, are not kept (the caller drops the plan); the folded
	// literals are listed, for the tests that check them.
	p.folded = foldedIn(plan.Blocks)
	for _, fn := range fns {
		p.folded = append(p.folded, foldedIn(fn.blocks)...)
		fn.blocks = nil
	}
	return p, nil
}

func countPlans(policy *ir.Policy) int {
	if policy.Plans == nil {
		return 0
	}
	return len(policy.Plans.Plans)
}

func maxLocal(params []ir.Local, ret ir.Local) int {
	m := int(ret)
	for _, l := range params {
		m = max(m, int(l))
	}
	return m
}

// resolver walks a plan's statements once: it resolves calls, checks every
// statement is one the evaluator runs, and finds the highest local.
type resolver struct {
	p        *Program
	byName   map[string]*function
	builtins map[string]*ir.BuiltinFunc
}

func (r resolver) blocks(blocks []*ir.Block, highest int) (int, error) {
	for _, b := range blocks {
		for i, s := range b.Stmts {
			if c, ok := s.(*call); ok { // a policy given to New again
				s = c.CallStmt
			}
			if c, ok := s.(*ir.CallStmt); ok {
				target, err := r.callee(c)
				if err != nil {
					return 0, err
				}
				b.Stmts[i] = &call{CallStmt: c, callee: target}
			}
			var err error
			if highest, err = r.stmt(s, highest); err != nil {
				return 0, err
			}
		}
	}
	return highest, nil
}

// call is a call statement with its target resolved, put in its place in
// the plan by New, so that running it looks nothing up.
type call struct {
	*ir.CallStmt
	callee callee
}

func (r resolver) block(b *ir.Block, highest int) (int, error) {
	return r.blocks([]*ir.Block{b}, highest)
}

// stmt resolves one statement and returns the highest local seen so far.
func (r resolver) stmt(s ir.Stmt, h int) (int, error) {
	locals := func(ls ...ir.Local) {
		for _, l := range ls {
			h = max(h, int(l))
		}
	}
	operands := func(ops ...ir.Operand) {
		for _, op := range ops {
			if l, ok := op.Value.(ir.Local); ok {
				locals(l)
			}
		}
	}
	switch s := s.(type) {
	case *ir.CallStmt:
		operands(s.Args...)
		locals(s.Result)
	case *ir.CallDynamicStmt:
		operands(s.Path...)
		locals(s.Args...)
		locals(s.Result)
	case *ir.BlockStmt:
		return r.blocks(s.Blocks, h)
	case *ir.ScanStmt:
		locals(s.Source, s.Key, s.Value)
		return r.block(s.Block, h)
	case *ir.NotStmt:
		return r.block(s.Block, h)
	case *ir.WithStmt:
		locals(s.Local)
		operands(s.Value)
		for _, i := range s.Path {
			if i < 0 || i >= len(r.p.strings) {
				return 0, fmt.Errorf("with path names string %d of %d", i, len(r.p.strings))
			}
		}
		return r.block(s.Block, h)
	case *ir.ReturnLocalStmt:
		locals(s.Source)
	case *ir.BreakStmt, *ir.NopStmt:
	case *constant: // a policy given to New again
		locals(s.Target)
	case *ir.DotStmt:
		operands(s.Source, s.Key)
		locals(s.Target)
	case *ir.LenStmt:
		operands(s.Source)
		locals(s.Target)
	case *ir.AssignIntStmt:
		locals(s.Target)
	case *ir.AssignVarStmt:
		operands(s.Source)
		locals(s.Target)
	case *ir.AssignVarOnceStmt:
		operands(s.Source)
		locals(s.Target)
	case *ir.ResetLocalStmt:
		locals(s.Target)
	case *ir.MakeNullStmt:
		locals(s.Target)
	case *ir.MakeNumberIntStmt:
		locals(s.Target)
	case *ir.MakeNumberRefStmt:
		if s.Index < 0 || s.Index >= len(r.p.strings) {
			return 0, fmt.Errorf("number names string %d of %d", s.Index, len(r.p.strings))
		}
		r.p.numbers[s.Index] = ast.NumberTerm(json.Number(r.p.strings[s.Index].Value.(ast.String)))
		locals(s.Target)
	case *ir.MakeArrayStmt:
		locals(s.Target)
	case *ir.MakeObjectStmt:
		locals(s.Target)
	case *ir.MakeSetStmt:
		locals(s.Target)
	case *ir.EqualStmt:
		operands(s.A, s.B)
	case *ir.NotEqualStmt:
		operands(s.A, s.B)
	case *ir.IsArrayStmt:
		operands(s.Source)
	case *ir.IsObjectStmt:
		operands(s.Source)
	case *ir.IsSetStmt:
		operands(s.Source)
	case *ir.IsDefinedStmt:
		locals(s.Source)
	case *ir.IsUndefinedStmt:
		locals(s.Source)
	case *ir.ArrayAppendStmt:
		operands(s.Value)
		locals(s.Array)
	case *ir.ObjectInsertStmt:
		operands(s.Key, s.Value)
		locals(s.Object)
	case *ir.ObjectInsertOnceStmt:
		operands(s.Key, s.Value)
		locals(s.Object)
	case *ir.ObjectMergeStmt:
		locals(s.A, s.B, s.Target)
	case *ir.SetAddStmt:
		operands(s.Value)
		locals(s.Set)
	case *ir.ResultSetAddStmt:
		locals(s.Value)
	default:
		return 0, fmt.Errorf("statement %T is not supported", s)
	}
	return h, nil
}

// callee resolves a call: a planned function, else one of topdown's
// built-ins the plan declares.
func (r resolver) callee(s *ir.CallStmt) (callee, error) {
	if fn, ok := r.byName[s.Func]; ok {
		if len(fn.params) != len(s.Args) {
			return callee{}, fmt.Errorf("%s is called with %d arguments, not %d", s.Func, len(s.Args), len(fn.params))
		}
		return callee{fn: fn, name: s.Func}, nil
	}
	decl, declared := r.builtins[s.Func]
	impl := topdown.GetBuiltin(s.Func)
	if !declared || impl == nil {
		return callee{}, fmt.Errorf("built-in %s is not available to the plan evaluator", s.Func)
	}
	c := callee{builtin: impl, name: s.Func, void: decl.Decl != nil && decl.Decl.Result() == nil}
	if b, ok := ast.BuiltinMap[s.Func]; ok {
		c.relation = b.Relation
	}
	return c, nil
}
