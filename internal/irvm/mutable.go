package irvm

import "github.com/open-policy-agent/opa/v1/ir"

// A folded literal is built once; its local gets a term around it on every
// evaluation (fold.go) because the plan may go on adding to the collection.
// Most literals are only ever read ({"Pod", "Deployment"}, ["spec"]), and
// those need no term of their own: the program's one, shared by every
// evaluation, will do. mutability finds which locals a statement may modify
// in place, the term of a folded literal's local included, so that the
// literals of all the other locals share their term.
//
// A local is mutable when a statement adds to its collection (ArrayAppend,
// ObjectInsert, ObjectInsertOnce, SetAdd), or when its term can reach a
// mutable local of this function or another: assigned to it, passed as an
// argument to a mutable parameter, or returned to a call whose result is
// mutable. Over-approximating is safe; it only costs a term.

// body is one function's statements, or the plan's.
type body struct {
	fn     *function // nil for the plan
	blocks []*ir.Block
	// mutable locals, found so far
	mutable map[ir.Local]bool
	// aliases[b] are the locals assigned to b
	aliases map[ir.Local][]ir.Local
	calls   []callSite
	// returns are the locals the function returns
	returns []ir.Local
}

// callSite is a call to a planned function: fn, or any function at a path
// (dynamic).
type callSite struct {
	fn      *function
	dynamic bool
	args    []ir.Local // -1 for a constant operand
	result  ir.Local
}

// mutability returns the mutable locals of each function and of the plan
// (under the nil key).
func (p *Program) mutability(fns []*function) map[*function]map[ir.Local]bool {
	bodies := make([]*body, 0, len(fns)+1)
	byFn := map[*function]*body{}
	for _, fn := range fns {
		b := newBody(fn, fn.blocks)
		bodies = append(bodies, b)
		byFn[fn] = b
	}
	bodies = append(bodies, newBody(nil, p.plan.Blocks))
	for changed := true; changed; {
		changed = false
		for _, b := range bodies {
			changed = b.propagate(bodies, byFn) || changed
		}
	}
	out := make(map[*function]map[ir.Local]bool, len(bodies))
	for _, b := range bodies {
		out[b.fn] = b.mutable
	}
	return out
}

func newBody(fn *function, blocks []*ir.Block) *body {
	b := &body{fn: fn, blocks: blocks, mutable: map[ir.Local]bool{}, aliases: map[ir.Local][]ir.Local{}}
	b.walk(blocks)
	return b
}

// walk records the statements that matter to mutability.
func (b *body) walk(blocks []*ir.Block) {
	for _, blk := range blocks {
		for _, s := range blk.Stmts {
			b.stmt(s)
		}
	}
}

func (b *body) stmt(s ir.Stmt) {
	switch s := s.(type) {
	case *ir.ArrayAppendStmt:
		b.mutable[s.Array] = true
	case *ir.ObjectInsertStmt:
		b.mutable[s.Object] = true
	case *ir.ObjectInsertOnceStmt:
		b.mutable[s.Object] = true
	case *ir.SetAddStmt:
		b.mutable[s.Set] = true
	case *ir.AssignVarStmt:
		b.alias(s.Source, s.Target)
	case *ir.AssignVarOnceStmt:
		b.alias(s.Source, s.Target)
	case *ir.ReturnLocalStmt:
		b.returns = append(b.returns, s.Source)
	case *call:
		if s.callee.fn != nil {
			b.calls = append(b.calls, callSite{fn: s.callee.fn, args: operandLocals(s.Args), result: s.Result})
		}
	case *ir.CallDynamicStmt:
		b.calls = append(b.calls, callSite{dynamic: true, args: s.Args, result: s.Result})
	default:
		b.walk(nested(s))
	}
}

func (b *body) alias(source ir.Operand, target ir.Local) {
	if l, ok := source.Value.(ir.Local); ok {
		b.aliases[target] = append(b.aliases[target], l)
	}
}

func operandLocals(ops []ir.Operand) []ir.Local {
	out := make([]ir.Local, len(ops))
	for i, op := range ops {
		out[i] = -1
		if l, ok := op.Value.(ir.Local); ok {
			out[i] = l
		}
	}
	return out
}

// propagate spreads mutability one step along assignments, arguments and
// results, and reports whether it found a new mutable local.
func (b *body) propagate(bodies []*body, byFn map[*function]*body) bool {
	changed := false
	mark := func(into *body, l ir.Local) {
		if l >= 0 && !into.mutable[l] {
			into.mutable[l] = true
			changed = true
		}
	}
	for target, sources := range b.aliases {
		if b.mutable[target] {
			for _, s := range sources {
				mark(b, s)
			}
		}
	}
	for _, c := range b.calls {
		callees := []*body{byFn[c.fn]}
		if c.dynamic {
			callees = bodies // any function may be at the path
		}
		for _, callee := range callees {
			if callee == nil || callee.fn == nil {
				continue
			}
			for i, param := range callee.fn.params {
				if i < len(c.args) && callee.mutable[param] {
					mark(b, c.args[i])
				}
			}
			if b.mutable[c.result] {
				for _, r := range callee.returns {
					mark(callee, r)
				}
			}
		}
	}
	return changed
}
