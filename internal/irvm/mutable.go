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
// mutable local of this function or another: assigned to it, merged into it
// (ObjectMerge), passed as an argument to a mutable parameter or to a
// built-in whose result is mutable (object.get returns its default),
// returned to a call whose result is mutable, or stored in a collection
// (as an element, key, value or with's value) while some mutable local is
// read out of a collection (DotStmt): the planner adds to a rule's partial
// value read back from the object being built (q.a := {"x"} beside
// q[k] contains "z"). That last path is followed bluntly, for the whole
// program. Over-approximating is safe; it only costs a term.
//
// A statement that would still modify a shared term panics (thaw), which
// the server turns into a refused request: never two evaluations writing
// to one value.

// body is one function's statements, or the plan's.
type body struct {
	fn *function // nil for the plan
	// mutable locals, found so far
	mutable map[ir.Local]bool
	// aliases[b] are the locals assigned to b
	aliases map[ir.Local][]ir.Local
	calls   []callSite
	// returns are the locals the function returns
	returns []ir.Local
	// stored are the locals put into a collection; read the locals read
	// out of one
	stored, read []ir.Local
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
func mutability(plan []*ir.Block, fns []*function) map[*function]map[ir.Local]bool {
	bodies := make([]*body, 0, len(fns)+1)
	byFn := map[*function]*body{}
	for _, fn := range fns {
		b := newBody(fn, fn.blocks)
		bodies = append(bodies, b)
		byFn[fn] = b
	}
	bodies = append(bodies, newBody(nil, plan))
	readBack := false
	for changed := true; changed; {
		changed = false
		for _, b := range bodies {
			changed = b.propagate(bodies, byFn) || changed
		}
		if !readBack && readsMutable(bodies) {
			readBack, changed = true, true
			for _, b := range bodies {
				for _, l := range b.stored {
					b.mutable[l] = true
				}
			}
		}
	}
	out := make(map[*function]map[ir.Local]bool, len(bodies))
	for _, b := range bodies {
		out[b.fn] = b.mutable
	}
	return out
}

func newBody(fn *function, blocks []*ir.Block) *body {
	b := &body{fn: fn, mutable: map[ir.Local]bool{}, aliases: map[ir.Local][]ir.Local{}}
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
		b.store(s.Value)
	case *ir.ObjectInsertStmt:
		b.mutable[s.Object] = true
		b.store(s.Key, s.Value)
	case *ir.ObjectInsertOnceStmt:
		b.mutable[s.Object] = true
		b.store(s.Key, s.Value)
	case *ir.SetAddStmt:
		b.mutable[s.Set] = true
		b.store(s.Value)
	case *ir.DotStmt:
		b.read = append(b.read, s.Target)
	case *ir.ObjectMergeStmt:
		b.aliases[s.Target] = append(b.aliases[s.Target], s.A, s.B)
	case *ir.WithStmt:
		b.store(s.Value)
		b.walk(nested(s))
	case *ir.AssignVarStmt:
		b.alias(s.Source, s.Target)
	case *ir.AssignVarOnceStmt:
		b.alias(s.Source, s.Target)
	case *ir.ReturnLocalStmt:
		b.returns = append(b.returns, s.Source)
	case *call:
		if s.callee.fn != nil {
			b.calls = append(b.calls, callSite{fn: s.callee.fn, args: operandLocals(s.Args), result: s.Result})
		} else {
			for _, arg := range s.Args {
				b.alias(arg, s.Result)
			}
		}
	case *ir.CallDynamicStmt:
		b.calls = append(b.calls, callSite{dynamic: true, args: s.Args, result: s.Result})
	default:
		b.walk(nested(s))
	}
}

func (b *body) store(ops ...ir.Operand) {
	for _, op := range ops {
		if l, ok := op.Value.(ir.Local); ok {
			b.stored = append(b.stored, l)
		}
	}
}

// readsMutable reports whether a local read out of a collection is mutable.
func readsMutable(bodies []*body) bool {
	for _, b := range bodies {
		for _, l := range b.read {
			if b.mutable[l] {
				return true
			}
		}
	}
	return false
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
