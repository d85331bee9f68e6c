package irvm

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/ir"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/topdown/builtins"
)

// What running a block or a statement leads to, besides a break of index
// k >= 0 (leave k+1 enclosing blocks; 0 is the block being run).
const (
	next     = -1 // go on with the next statement
	returned = -2 // the function returned
)

// ErrConflict is the error of a complete rule with two values, or an object
// rule with two values for one key: topdown's eval_conflict_error.
var ErrConflict = errors.New("eval_conflict_error")

// checkEvery is how many calls and iterations pass between two looks at the
// evaluation's context.
const checkEvery = 256

// noMetrics is what built-ins that time themselves are given.
var noMetrics = metrics.NoOp()

// Eval evaluates the plan on input and data (either may be nil) and returns
// its result set: one object of the query's bindings per result.
func (p *Program) Eval(ctx context.Context, input, data *ast.Term) ([]*ast.Term, error) {
	e := p.evaluation(ctx)
	defer p.release(e)
	locals := e.frame(p.locals)
	locals[ir.Input], locals[ir.Data] = input, data
	for _, b := range p.plan.Blocks {
		r, err := e.run(locals, b)
		if err != nil {
			return nil, err
		}
		if r == returned || r > 0 { // out of the plan
			break
		}
	}
	return slices.Clone(e.results), nil
}

// evaluation takes a reset evaluation from the program's pool: frames,
// memo and argument lists are reused from one evaluation to the next.
func (p *Program) evaluation(ctx context.Context) *evaluation {
	e, ok := p.pool.Get().(*evaluation)
	if !ok {
		e = &evaluation{p: p, memo: make([]memoEntry, p.memoized)}
		e.iter = func(t *ast.Term) error {
			e.out = t
			return nil
		}
	}
	e.ctx = ctx
	return e
}

// release clears what an evaluation refers to, so the pool keeps no
// request's values alive, and puts it back.
func (p *Program) release(e *evaluation) {
	clear(e.stack[:cap(e.stack)])
	clear(e.memo)
	clear(e.results)
	clear(e.args[:cap(e.args)])
	e.stack, e.results, e.args = e.stack[:0], e.results[:0], e.args[:0]
	e.ctx, e.retval, e.out, e.steps, e.scanning = nil, nil, nil, 0, 0
	for _, sc := range e.scanners {
		sc.locals, sc.s, sc.err = nil, nil, nil
	}
	if e.bctx != nil {
		e.bctx.Context, e.bctx.Time = nil, nil
		clear(e.bctx.Cache)
	}
	p.pool.Put(e)
}

// frame takes n undefined locals from the evaluation's stack, given back by
// pop. A frame keeps its slice when the stack grows for a deeper call.
func (e *evaluation) frame(n int) []*ast.Term {
	base := len(e.stack)
	if cap(e.stack) < base+n {
		e.stack = make([]*ast.Term, base, 2*(base+n))
	}
	e.stack = e.stack[:base+n]
	locals := e.stack[base : base+n : base+n]
	clear(locals)
	return locals
}

// pop gives a frame of n locals back.
func (e *evaluation) pop(n int) { e.stack = e.stack[:len(e.stack)-n] }

// Value evaluates a plan whose query has one binding and returns its value
// in the first result; nil when the query is undefined.
func (p *Program) Value(ctx context.Context, input, data *ast.Term) (ast.Value, error) {
	results, err := p.Eval(ctx, input, data)
	if err != nil || len(results) == 0 {
		return nil, err
	}
	obj, ok := results[0].Value.(ast.Object)
	if !ok || obj.Len() != 1 {
		return nil, fmt.Errorf("the query's result is %v, not one binding", results[0])
	}
	var v ast.Value
	obj.Foreach(func(_, t *ast.Term) { v = t.Value })
	return v, nil
}

type memoEntry struct {
	done  bool
	value *ast.Term
}

// evaluation is the state of one Eval.
type evaluation struct {
	p       *Program
	ctx     context.Context
	memo    []memoEntry
	results []*ast.Term
	// retval is the value of the last ReturnLocalStmt.
	retval *ast.Term
	// args is reused for the arguments of every call: functions copy
	// theirs into their frame and built-ins do not keep them.
	args []*ast.Term
	// out and iter collect a built-in's output.
	out  *ast.Term
	iter func(*ast.Term) error
	bctx *topdown.BuiltinContext
	// stack holds the frames of the functions being run.
	stack []*ast.Term
	// steps counts calls and iterations, to look at ctx now and then.
	steps int
	// scanners are those of the scans being run (scanning of them) and
	// of earlier, deeper ones, kept for reuse.
	scanners []*scanner
	scanning int
}

// run runs a block's statements until one breaks or returns.
func (e *evaluation) run(locals []*ast.Term, b *ir.Block) (int, error) {
	for _, s := range b.Stmts {
		r, err := e.stmt(locals, s)
		if err != nil || r != next {
			return r, err
		}
	}
	return next, nil
}

// outer is what a break from a nested block means one level out: a break
// of index 0 ended the nested block only.
func outer(r int) int {
	if r > 0 {
		return r - 1
	}
	if r == returned {
		return returned
	}
	return next
}

func (e *evaluation) read(locals []*ast.Term, op ir.Operand) *ast.Term {
	switch v := op.Value.(type) {
	case ir.Local:
		return locals[v]
	case ir.StringIndex:
		return e.p.strings[v]
	case ir.Bool:
		return ast.InternedTerm(bool(v))
	}
	return nil
}

// local reads an operand that must be a local: a constant operand, or an
// undefined local, is nil.
func local(locals []*ast.Term, op ir.Operand) *ast.Term {
	if l, ok := op.Value.(ir.Local); ok {
		return locals[l]
	}
	return nil
}

func (e *evaluation) stmt(locals []*ast.Term, s ir.Stmt) (int, error) {
	switch s := s.(type) {
	case *call:
		return e.callStmt(locals, s)
	case *constant:
		if s.Term != nil {
			locals[s.Target] = s.Term
		} else {
			locals[s.Target] = &ast.Term{Value: s.Value, Location: frozen}
		}
	case *ir.AssignVarStmt:
		locals[s.Target] = e.read(locals, s.Source)
	case *ir.AssignVarOnceStmt:
		v := e.read(locals, s.Source)
		if cur := locals[s.Target]; cur != nil {
			if !equal(cur, v) {
				return 0, conflict(s.Location, "complete rules must not produce multiple outputs")
			}
			return next, nil
		}
		locals[s.Target] = v
	case *ir.DotStmt:
		src := local(locals, s.Source)
		if src == nil {
			return 0, nil
		}
		v := dot(src.Value, e.read(locals, s.Key))
		if v == nil {
			return 0, nil
		}
		locals[s.Target] = v
	case *ir.ArrayAppendStmt:
		t := locals[s.Array]
		arr, ok := valueOf(t).(*ast.Array)
		if !ok {
			return 0, fmt.Errorf("appending to %v, which is not an array", t)
		}
		thaw(t)
		t.Value = arr.Append(e.read(locals, s.Value))
	case *ir.ResetLocalStmt:
		locals[s.Target] = nil
	case *ir.NotEqualStmt:
		if equal(e.read(locals, s.A), e.read(locals, s.B)) {
			return 0, nil
		}
	case *ir.EqualStmt:
		if !equal(e.read(locals, s.A), e.read(locals, s.B)) {
			return 0, nil
		}
	case *ir.IsDefinedStmt:
		if locals[s.Source] == nil {
			return 0, nil
		}
	case *ir.IsUndefinedStmt:
		if locals[s.Source] != nil {
			return 0, nil
		}
	case *ir.ReturnLocalStmt:
		e.retval = locals[s.Source]
		return returned, nil
	case *ir.MakeArrayStmt:
		if s.Capacity == 0 {
			locals[s.Target] = &ast.Term{Value: emptyArray, Location: frozen}
		} else {
			locals[s.Target] = ast.NewTerm(ast.NewArrayWithCapacity(int(s.Capacity)))
		}
	case *ir.MakeObjectStmt:
		locals[s.Target] = &ast.Term{Value: emptyObject, Location: frozen}
	case *ir.MakeSetStmt:
		locals[s.Target] = &ast.Term{Value: emptySet, Location: frozen}
	case *ir.ObjectInsertStmt:
		obj, err := object(locals[s.Object])
		if err != nil {
			return 0, err
		}
		obj.Insert(e.read(locals, s.Key), e.read(locals, s.Value))
	case *ir.ObjectInsertOnceStmt:
		obj, err := object(locals[s.Object])
		if err != nil {
			return 0, err
		}
		k, v := e.read(locals, s.Key), e.read(locals, s.Value)
		if cur := obj.Get(k); cur != nil {
			if !equal(cur, v) {
				return 0, conflict(s.Location, "object keys must be unique")
			}
			return next, nil
		}
		obj.Insert(k, v)
	case *ir.SetAddStmt:
		t := locals[s.Set]
		if _, ok := valueOf(t).(ast.Set); !ok {
			return 0, fmt.Errorf("adding to %v, which is not a set", t)
		}
		thaw(t)
		t.Value.(ast.Set).Add(e.read(locals, s.Value))
	case *ir.BlockStmt:
		for _, b := range s.Blocks {
			r, err := e.run(locals, b)
			if err != nil {
				return 0, err
			}
			if r = outer(r); r != next {
				return r, nil
			}
		}
	case *ir.ScanStmt:
		return e.scan(locals, s)
	case *ir.NotStmt:
		r, err := e.run(locals, s.Block)
		switch {
		case err != nil:
			return 0, err
		case r == next: // the negated block held
			return 0, nil
		case r == 0: // it did not
			return next, nil
		}
		return outer(r), nil
	case *ir.BreakStmt:
		return int(s.Index), nil
	case *ir.CallDynamicStmt:
		return e.callDynamic(locals, s)
	case *ir.WithStmt:
		return e.with(locals, s)
	case *ir.MakeNullStmt:
		locals[s.Target] = ast.InternedNullTerm
	case *ir.MakeNumberIntStmt:
		locals[s.Target] = ast.InternedTerm(int(s.Value))
	case *ir.AssignIntStmt:
		locals[s.Target] = ast.InternedTerm(int(s.Value))
	case *ir.MakeNumberRefStmt:
		locals[s.Target] = e.p.numbers[s.Index]
	case *ir.LenStmt:
		n, ok := length(e.read(locals, s.Source))
		if !ok {
			return 0, nil
		}
		locals[s.Target] = ast.InternedTerm(n)
	case *ir.IsArrayStmt:
		if _, ok := valueOf(local(locals, s.Source)).(*ast.Array); !ok {
			return 0, nil
		}
	case *ir.IsObjectStmt:
		if _, ok := valueOf(local(locals, s.Source)).(ast.Object); !ok {
			return 0, nil
		}
	case *ir.IsSetStmt:
		if _, ok := valueOf(local(locals, s.Source)).(ast.Set); !ok {
			return 0, nil
		}
	case *ir.ObjectMergeStmt:
		locals[s.Target] = merge(locals[s.A], locals[s.B])
	case *ir.ResultSetAddStmt:
		e.results = append(e.results, locals[s.Value])
	case *ir.NopStmt:
	default:
		return 0, fmt.Errorf("statement %T is not supported", s)
	}
	return next, nil
}

// scan runs the block for each key and value of a collection, in the order
// topdown iterates: arrays by index, objects and sets sorted.
func (e *evaluation) scan(locals []*ast.Term, s *ir.ScanStmt) (int, error) {
	src := locals[s.Source]
	if src == nil {
		return next, nil
	}
	sc := e.scanner()
	sc.locals, sc.s, sc.result, sc.err = locals, s, next, nil
	switch c := src.Value.(type) {
	case *ast.Array:
		for i := range c.Len() {
			if sc.body(ast.InternedTerm(i), c.Elem(i)) {
				break
			}
		}
	case ast.Object:
		c.Until(sc.pair)
	case ast.Set:
		c.Until(sc.elem)
	}
	result, err := sc.result, sc.err
	sc.locals, sc.s, sc.err = nil, nil, nil
	e.scanning--
	return result, err
}

// scanner runs the block of one scan being run. Its callbacks are bound
// once, when it is first needed, so that a scan allocates nothing.
type scanner struct {
	e      *evaluation
	locals []*ast.Term
	s      *ir.ScanStmt
	result int
	err    error
	// pair and elem are body for objects' and sets' iterators.
	pair func(k, v *ast.Term) bool
	elem func(t *ast.Term) bool
}

// scanner is the next unused scanner of the evaluation's stack of them.
func (e *evaluation) scanner() *scanner {
	if e.scanning == len(e.scanners) {
		sc := &scanner{e: e}
		sc.pair = sc.body
		sc.elem = func(t *ast.Term) bool { return sc.body(t, t) }
		e.scanners = append(e.scanners, sc)
	}
	sc := e.scanners[e.scanning]
	e.scanning++
	return sc
}

// body runs one iteration and reports whether to stop.
func (sc *scanner) body(k, v *ast.Term) bool {
	e := sc.e
	if e.steps++; e.steps%checkEvery == 0 {
		if sc.err = e.ctx.Err(); sc.err != nil {
			return true
		}
	}
	sc.locals[sc.s.Key], sc.locals[sc.s.Value] = k, v
	r, err := e.run(sc.locals, sc.s.Block)
	switch {
	case err != nil:
		sc.err = err
	case r == next || r == 0: // the body held, or broke out of itself: go on
		return false
	case r == 1: // out of the scan
	case r == returned:
		sc.result = returned
	default: // beyond the block holding the scan
		sc.result = r - 2
	}
	return true
}

func (e *evaluation) callStmt(locals []*ast.Term, s *call) (int, error) {
	c := s.callee
	args := e.args[:0]
	for _, op := range s.Args {
		args = append(args, e.read(locals, op))
	}
	e.args = args
	var (
		v   *ast.Term
		err error
	)
	if c.fn != nil {
		v, err = e.call(c.fn, args)
	} else {
		v, err = e.builtin(c, args)
	}
	if err != nil || v == nil {
		return 0, err
	}
	locals[s.Result] = v
	return next, nil
}

// call runs a planned function; nil is undefined.
func (e *evaluation) call(fn *function, args []*ast.Term) (*ast.Term, error) {
	if fn.memo >= 0 && e.memo[fn.memo].done {
		return e.memo[fn.memo].value, nil
	}
	if e.steps++; e.steps%checkEvery == 0 {
		if err := e.ctx.Err(); err != nil {
			return nil, err
		}
	}
	locals := e.frame(fn.locals)
	defer e.pop(fn.locals)
	for i, p := range fn.params {
		locals[p] = args[i]
	}
	var v *ast.Term
	for _, b := range fn.blocks {
		r, err := e.run(locals, b)
		if err != nil {
			return nil, err
		}
		if r == returned {
			v = e.retval
			break
		}
		if r > 0 { // out of the function's body: undefined
			break
		}
	}
	if fn.memo >= 0 {
		e.memo[fn.memo] = memoEntry{done: true, value: v}
	}
	return v, nil
}

// callDynamic calls the rule at a path computed at run time, as for
// data.rules[family].violations. No function at the path: break 0, so the
// plan reads the path from data instead; a function that is undefined:
// the reference is undefined, which the planner reaches with break 3.
func (e *evaluation) callDynamic(locals []*ast.Term, s *ir.CallDynamicStmt) (int, error) {
	node := e.p.dynamic
	for _, op := range s.Path {
		str, ok := valueOf(e.read(locals, op)).(ast.String)
		if !ok {
			return 0, nil
		}
		if node = node.children[string(str)]; node == nil {
			return 0, nil
		}
	}
	fn := node.fn
	if fn == nil || len(fn.params) != len(s.Args) {
		return 0, nil
	}
	args := e.args[:0]
	for _, l := range s.Args {
		args = append(args, locals[l])
	}
	e.args = args
	v, err := e.call(fn, args)
	if err != nil {
		return 0, err
	}
	if v == nil {
		return 3, nil
	}
	locals[s.Result] = v
	return next, nil
}

// with runs a block with a local (input, data) replaced at a path, and
// a fresh memo, since rules computed before may now differ.
func (e *evaluation) with(locals []*ast.Term, s *ir.WithStmt) (int, error) {
	saved, savedMemo := locals[s.Local], e.memo
	path := make([]*ast.Term, len(s.Path))
	for i, idx := range s.Path {
		path[i] = e.p.strings[idx]
	}
	locals[s.Local] = upsert(saved, path, e.read(locals, s.Value))
	e.memo = make([]memoEntry, e.p.memoized)
	r, err := e.run(locals, s.Block)
	locals[s.Local], e.memo = saved, savedMemo
	switch {
	case err != nil:
		return 0, err
	case r == next:
		return next, nil
	case r == 0:
		return 0, nil
	}
	return outer(r), nil
}

// builtin calls one of topdown's built-ins; nil is undefined. A built-in's
// error makes the call undefined, as topdown does without strict built-in
// errors, except a halt, which ends the evaluation.
func (e *evaluation) builtin(c callee, args []*ast.Term) (*ast.Term, error) {
	if e.bctx == nil {
		e.bctx = &topdown.BuiltinContext{Metrics: noMetrics, Seed: rand.Reader, Cache: builtins.Cache{}}
	}
	if e.bctx.Time == nil {
		// The evaluation's clock, read at its first built-in: time.now_ns
		// is the same throughout one evaluation.
		e.bctx.Context = e.ctx
		e.bctx.Time = ast.UIntNumberTerm(uint64(time.Now().UnixNano()))
	}
	if c.relation {
		return e.relation(c, args)
	}
	e.out = nil
	if err := c.builtin(*e.bctx, args, e.iter); err != nil {
		return nil, builtinError(err)
	}
	if c.void {
		return ast.InternedTerm(true), nil
	}
	return e.out, nil
}

// relation calls a built-in that has any number of outputs: the array of
// them.
func (e *evaluation) relation(c callee, args []*ast.Term) (*ast.Term, error) {
	var outputs []*ast.Term
	iter := func(t *ast.Term) error {
		outputs = append(outputs, t)
		return nil
	}
	if err := c.builtin(*e.bctx, args, iter); err != nil {
		return nil, builtinError(err)
	}
	return ast.ArrayTerm(outputs...), nil
}

// builtinError is what a built-in's error does: a halt ends the
// evaluation, any other error makes the call undefined.
func builtinError(err error) error {
	var halt topdown.Halt
	if errors.As(err, &halt) {
		return err
	}
	return nil
}

func conflict(loc ir.Location, msg string) error {
	return fmt.Errorf("%w: %s (at %d:%d)", ErrConflict, msg, loc.Row, loc.Col)
}

func valueOf(t *ast.Term) ast.Value {
	if t == nil {
		return nil
	}
	return t.Value
}

func equal(a, b *ast.Term) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	return ast.Compare(a.Value, b.Value) == 0
}

// dot is src[key]: an object's value, an array's element, a set's member.
func dot(src ast.Value, key *ast.Term) *ast.Term {
	if key == nil {
		return nil
	}
	switch c := src.(type) {
	case ast.Object:
		return c.Get(key)
	case *ast.Array:
		n, ok := key.Value.(ast.Number)
		if !ok {
			return nil
		}
		i, ok := n.Int()
		if !ok || i < 0 || i >= c.Len() {
			return nil
		}
		return c.Elem(i)
	case ast.Set:
		if c.Contains(key) {
			return key
		}
	}
	return nil
}

// object is the object t holds, thawed to be modified.
func object(t *ast.Term) (ast.Object, error) {
	if _, ok := valueOf(t).(ast.Object); !ok {
		return nil, fmt.Errorf("inserting into %v, which is not an object", t)
	}
	thaw(t)
	return t.Value.(ast.Object), nil
}

// length is the number of elements of a collection, or of characters of a
// string.
func length(t *ast.Term) (int, bool) {
	switch v := valueOf(t).(type) {
	case *ast.Array:
		return v.Len(), true
	case ast.Object:
		return v.Len(), true
	case ast.Set:
		return v.Len(), true
	case ast.String:
		return utf8.RuneCountInString(string(v)), true
	}
	return 0, false
}

// merge is a base document (a) merged with the virtual one beside it (b),
// as OPA's WebAssembly runtime merges them: objects merge key by key, deeply;
// where the two disagree on a value that is not an object on both sides, the
// base document's is kept. Neither is modified.
func merge(a, b *ast.Term) *ast.Term {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	ao, aok := a.Value.(ast.Object)
	bo, bok := b.Value.(ast.Object)
	if !aok || !bok {
		return a
	}
	merged := ast.NewObject()
	ao.Foreach(merged.Insert)
	bo.Foreach(func(k, v *ast.Term) {
		merged.Insert(k, merge(merged.Get(k), v))
	})
	return ast.NewTerm(merged)
}

// upsert is t with path set to v, copying each object on the path; t is
// never modified.
func upsert(t *ast.Term, path []*ast.Term, v *ast.Term) *ast.Term {
	if len(path) == 0 {
		return v
	}
	obj := ast.NewObject()
	if old, ok := valueOf(t).(ast.Object); ok {
		old.Foreach(obj.Insert)
	}
	obj.Insert(path[0], upsert(obj.Get(path[0]), path[1:], v))
	return ast.NewTerm(obj)
}
