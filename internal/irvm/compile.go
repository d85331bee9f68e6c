package irvm

import (
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/ir"
)

// instr runs one compiled statement on a frame's locals and returns next,
// returned, failed (the error is in e.err) or the index of a break.
type instr func(e *evaluation, l []*ast.Term) int

// code is a compiled block.
type code []instr

// operand is a compiled ir.Operand: a local's index, or when local is -1 a
// constant term (nil for an operand the plan cannot have).
type operand struct {
	local int
	term  *ast.Term
}

func (o operand) get(l []*ast.Term) *ast.Term {
	if o.local < 0 {
		return o.term
	}
	return l[o.local]
}

// compiler compiles the statements of a program whose calls are resolved,
// once, in New: each into a closure over what it reads, its operands decoded
// into a local's index or a constant's term, its nested blocks compiled.
// Running a statement is then one indirect call to code made for it, with
// no switch on the statement's type or on its operands' types, and a block
// is a slice of such calls laid out together.
type compiler struct{ p *Program }

func (c compiler) blocks(blocks []*ir.Block) []code {
	out := make([]code, len(blocks))
	for i, b := range blocks {
		out[i] = c.block(b)
	}
	return out
}

func (c compiler) block(b *ir.Block) code {
	out := make(code, 0, len(b.Stmts))
	for _, s := range b.Stmts {
		if _, nop := s.(*ir.NopStmt); !nop {
			out = append(out, c.stmt(s))
		}
	}
	return out
}

func (c compiler) operand(op ir.Operand) operand {
	if l, ok := op.Value.(ir.Local); ok {
		return operand{local: int(l)}
	}
	return operand{local: -1, term: c.p.constantOperand(op)}
}

func (c compiler) operands(ops []ir.Operand) []operand {
	out := make([]operand, len(ops))
	for i, op := range ops {
		out[i] = c.operand(op)
	}
	return out
}

// set is the statement that sets a local to one term.
func set(target ir.Local, t *ast.Term) instr {
	return func(_ *evaluation, l []*ast.Term) int {
		l[target] = t
		return next
	}
}

//nolint:gocyclo,cyclop,funlen // one case per statement type, as in ir
func (c compiler) stmt(s ir.Stmt) instr {
	switch s := s.(type) {
	case *call:
		return c.call(s)
	case *constant:
		if s.Term != nil {
			return set(s.Target, s.Term)
		}
		return fresh(s.Target, s.Value)
	case *ir.AssignVarStmt:
		src, target := c.operand(s.Source), s.Target
		if src.local < 0 {
			return set(target, src.term)
		}
		from := src.local
		return func(_ *evaluation, l []*ast.Term) int {
			l[target] = l[from]
			return next
		}
	case *ir.AssignVarOnceStmt:
		src, target, loc := c.operand(s.Source), s.Target, s.Location
		return func(e *evaluation, l []*ast.Term) int {
			v := src.get(l)
			if cur := l[target]; cur != nil {
				if !equal(cur, v) {
					return e.fail(conflict(loc, "complete rules must not produce multiple outputs"))
				}
				return next
			}
			l[target] = v
			return next
		}
	case *ir.DotStmt:
		return c.dot(s)
	case *ir.ArrayAppendStmt:
		target, v := s.Array, c.operand(s.Value)
		return func(e *evaluation, l []*ast.Term) int {
			t := l[target]
			arr, ok := valueOf(t).(*ast.Array)
			if !ok {
				return e.fail(fmt.Errorf("appending to %v, which is not an array", t))
			}
			appendTo(t, arr, v.get(l))
			return next
		}
	case *ir.ResetLocalStmt:
		return set(s.Target, nil)
	case *ir.NotEqualStmt:
		a, b := c.operand(s.A), c.operand(s.B)
		return func(_ *evaluation, l []*ast.Term) int {
			if equal(a.get(l), b.get(l)) {
				return 0
			}
			return next
		}
	case *ir.EqualStmt:
		a, b := c.operand(s.A), c.operand(s.B)
		return func(_ *evaluation, l []*ast.Term) int {
			if !equal(a.get(l), b.get(l)) {
				return 0
			}
			return next
		}
	case *ir.IsDefinedStmt:
		src := s.Source
		return func(_ *evaluation, l []*ast.Term) int {
			if l[src] == nil {
				return 0
			}
			return next
		}
	case *ir.IsUndefinedStmt:
		src := s.Source
		return func(_ *evaluation, l []*ast.Term) int {
			if l[src] != nil {
				return 0
			}
			return next
		}
	case *ir.ReturnLocalStmt:
		src := s.Source
		return func(e *evaluation, l []*ast.Term) int {
			e.retval = l[src]
			return returned
		}
	case *ir.MakeArrayStmt:
		if s.Capacity == 0 {
			return fresh(s.Target, emptyArray)
		}
		target, capacity := s.Target, int(s.Capacity)
		return func(e *evaluation, l []*ast.Term) int {
			l[target] = e.term(ast.NewArrayWithCapacity(capacity), building)
			return next
		}
	case *ir.MakeObjectStmt:
		return fresh(s.Target, emptyObject)
	case *ir.MakeSetStmt:
		return fresh(s.Target, emptySet)
	case *ir.ObjectInsertStmt:
		target, k, v := s.Object, c.operand(s.Key), c.operand(s.Value)
		return func(e *evaluation, l []*ast.Term) int {
			obj, err := object(l[target])
			if err != nil {
				return e.fail(err)
			}
			obj.Insert(k.get(l), v.get(l))
			return next
		}
	case *ir.ObjectInsertOnceStmt:
		target, k, v, loc := s.Object, c.operand(s.Key), c.operand(s.Value), s.Location
		return func(e *evaluation, l []*ast.Term) int {
			obj, err := object(l[target])
			if err != nil {
				return e.fail(err)
			}
			k, v := k.get(l), v.get(l)
			if cur := obj.Get(k); cur != nil {
				if !equal(cur, v) {
					return e.fail(conflict(loc, "object keys must be unique"))
				}
				return next
			}
			obj.Insert(k, v)
			return next
		}
	case *ir.SetAddStmt:
		target, v := s.Set, c.operand(s.Value)
		return func(e *evaluation, l []*ast.Term) int {
			t := l[target]
			if _, ok := valueOf(t).(ast.Set); !ok {
				return e.fail(fmt.Errorf("adding to %v, which is not a set", t))
			}
			thaw(t)
			t.Value.(ast.Set).Add(v.get(l))
			return next
		}
	case *ir.BlockStmt:
		blocks := c.blocks(s.Blocks)
		return func(e *evaluation, l []*ast.Term) int {
			for _, b := range blocks {
				switch r := e.run(l, b); {
				case r == failed:
					return failed
				case r > 0 || r == returned:
					return outer(r)
				}
			}
			return next
		}
	case *ir.ScanStmt:
		sc := &scan{source: s.Source, key: s.Key, value: s.Value, body: c.block(s.Block)}
		return sc.run
	case *ir.NotStmt:
		blk := c.block(s.Block)
		return func(e *evaluation, l []*ast.Term) int {
			switch r := e.run(l, blk); r {
			case next: // the negated block held
				return 0
			case 0: // it did not
				return next
			case failed:
				return failed
			default:
				return outer(r)
			}
		}
	case *ir.BreakStmt:
		index := int(s.Index)
		return func(*evaluation, []*ast.Term) int { return index }
	case *ir.CallDynamicStmt:
		return c.callDynamic(s)
	case *ir.WithStmt:
		return c.with(s)
	case *ir.MakeNullStmt:
		return set(s.Target, ast.InternedNullTerm)
	case *ir.MakeNumberIntStmt:
		return set(s.Target, ast.InternedTerm(int(s.Value)))
	case *ir.AssignIntStmt:
		return set(s.Target, ast.InternedTerm(int(s.Value)))
	case *ir.MakeNumberRefStmt:
		return set(s.Target, c.p.numbers[s.Index])
	case *ir.LenStmt:
		src, target := c.operand(s.Source), s.Target
		return func(_ *evaluation, l []*ast.Term) int {
			n, ok := length(src.get(l))
			if !ok {
				return 0
			}
			l[target] = ast.InternedTerm(n)
			return next
		}
	case *ir.IsArrayStmt:
		return is[*ast.Array](c.local(s.Source))
	case *ir.IsObjectStmt:
		return is[ast.Object](c.local(s.Source))
	case *ir.IsSetStmt:
		return is[ast.Set](c.local(s.Source))
	case *ir.ObjectMergeStmt:
		a, b, target := s.A, s.B, s.Target
		return func(_ *evaluation, l []*ast.Term) int {
			l[target] = merge(l[a], l[b])
			return next
		}
	case *ir.ResultSetAddStmt:
		src := s.Value
		return func(e *evaluation, l []*ast.Term) int {
			e.results = append(e.results, l[src])
			return next
		}
	}
	// New's resolver refuses every other statement before compiling.
	panic(fmt.Sprintf("irvm: statement %T is not supported", s))
}

// is is the statement that is undefined unless src holds a V.
func is[V ast.Value](src operand) instr {
	return func(_ *evaluation, l []*ast.Term) int {
		if _, ok := valueOf(src.get(l)).(V); !ok {
			return 0
		}
		return next
	}
}

// local is an operand that must be a local: any other is read as undefined.
func (c compiler) local(op ir.Operand) operand {
	if l, ok := op.Value.(ir.Local); ok {
		return operand{local: int(l)}
	}
	return operand{local: -1}
}

// fresh is the statement that gives a local a term of its own, marked
// frozen, around a shared value: an empty collection, or a folded literal
// the plan may add to.
func fresh(target ir.Local, v ast.Value) instr {
	return func(e *evaluation, l []*ast.Term) int {
		l[target] = e.term(v, frozen)
		return next
	}
}

// dot compiles src[key].
func (c compiler) dot(s *ir.DotStmt) instr {
	src, key, target := c.local(s.Source), c.operand(s.Key), s.Target
	if src.local < 0 {
		return func(*evaluation, []*ast.Term) int { return 0 }
	}
	from := src.local
	if k, ok := constantString(key); ok {
		return func(_ *evaluation, l []*ast.Term) int {
			t := l[from]
			if t == nil {
				return 0
			}
			var v *ast.Term
			if obj, ok := t.Value.(ast.Object); ok {
				v = getString(obj, k)
			} else {
				v = dot(t.Value, k.term) // a set's member; an array has no string key
			}
			if v == nil {
				return 0
			}
			l[target] = v
			return next
		}
	}
	return func(_ *evaluation, l []*ast.Term) int {
		t := l[from]
		if t == nil {
			return 0
		}
		v := dot(t.Value, key.get(l))
		if v == nil {
			return 0
		}
		l[target] = v
		return next
	}
}

// call compiles a call to a planned function or a built-in.
func (c compiler) call(s *call) instr {
	args, result, callee := c.operands(s.Args), s.Result, s.callee
	if fn := callee.fn; fn != nil {
		// A rule is computed at most once per evaluation, and most calls
		// find it computed: its memo is read here without calling e.call
		// (which reads it too, for CallDynamicStmt).
		memo := fn.memo
		return func(e *evaluation, l []*ast.Term) int {
			var v *ast.Term
			if memo >= 0 && e.memo[memo].done {
				v = e.memo[memo].value
			} else {
				v = e.call(fn, l, args)
			}
			if v == nil {
				return e.undefined()
			}
			l[result] = v
			return next
		}
	}
	var nat native // a relation gives every output: topdown's alone
	if !callee.relation {
		nat = natives[callee.name]
	}
	return func(e *evaluation, l []*ast.Term) int {
		in := e.args[:0]
		for _, a := range args {
			in = append(in, a.get(l))
		}
		e.args = in
		var v *ast.Term
		if nat != nil {
			v = nat(in)
		}
		if v == nil {
			var err error
			if v, err = e.builtin(callee, in); err != nil {
				return e.fail(err)
			}
			if v == nil {
				return 0
			}
		}
		l[result] = v
		return next
	}
}

// callDynamic compiles a call to the rule at a path computed at run time,
// as for data.rules[family].violations. No function at the path: break 0,
// so the plan reads the path from data instead; a function that is
// undefined: the reference is undefined, which the planner reaches with
// break 3.
func (c compiler) callDynamic(s *ir.CallDynamicStmt) instr {
	path, result := c.operands(s.Path), s.Result
	args := make([]operand, len(s.Args))
	for i, a := range s.Args {
		args[i] = operand{local: int(a)}
	}
	root := c.p.dynamic
	return func(e *evaluation, l []*ast.Term) int {
		node := root
		for _, op := range path {
			str, ok := valueOf(op.get(l)).(ast.String)
			if !ok {
				return 0
			}
			if node = node.children[string(str)]; node == nil {
				return 0
			}
		}
		fn := node.fn
		if fn == nil || len(fn.params) != len(args) {
			return 0
		}
		v := e.call(fn, l, args)
		if v == nil {
			if e.err != nil {
				return failed
			}
			return 3
		}
		l[result] = v
		return next
	}
}

// with compiles a block run with a local (input, data) replaced at a path,
// and a fresh memo, since rules computed before may now differ.
func (c compiler) with(s *ir.WithStmt) instr {
	path := make([]*ast.Term, len(s.Path))
	for i, idx := range s.Path {
		path[i] = c.p.strings[idx]
	}
	target, value, blk := s.Local, c.operand(s.Value), c.block(s.Block)
	return func(e *evaluation, l []*ast.Term) int {
		saved, savedMemo := l[target], e.memo
		l[target] = upsert(saved, path, value.get(l))
		e.memo = make([]memoEntry, e.p.memoized)
		r := e.run(l, blk)
		l[target], e.memo = saved, savedMemo
		switch r {
		case next, 0, failed:
			return r
		}
		return outer(r)
	}
}
