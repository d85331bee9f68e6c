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
	failed   = -3 // the evaluation failed: its error is in evaluation.err
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
	for _, b := range p.code {
		r := e.run(locals, b)
		if r == failed {
			return nil, e.err
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
	e.ctx, e.err, e.retval, e.out, e.steps, e.scanning = nil, nil, nil, nil, 0, 0
	for _, sc := range e.scanners {
		sc.locals, sc.s = nil, nil
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

// termSlab is how many terms one allocation of an evaluation's holds.
const termSlab = 32

// term is a new term of v at loc, one of a slab of them: a plan makes
// dozens of terms an evaluation (its collections' locals), one allocation
// each until now. A slab's unused terms are kept with the evaluation, as
// nothing refers to them; its used ones are the evaluation's values, which
// no one gives back.
func (e *evaluation) term(v ast.Value, loc *ast.Location) *ast.Term {
	if len(e.terms) == 0 {
		e.terms = make([]ast.Term, termSlab)
	}
	t := &e.terms[0]
	e.terms = e.terms[1:]
	t.Value, t.Location = v, loc
	return t
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
	// err is the error of an evaluation that failed.
	err error
	// retval is the value of the last ReturnLocalStmt.
	retval *ast.Term
	// args is reused for the arguments of every built-in call: built-ins
	// do not keep them (functions read theirs into their frame).
	args []*ast.Term
	// out and iter collect a built-in's output.
	out  *ast.Term
	iter func(*ast.Term) error
	bctx *topdown.BuiltinContext
	// stack holds the frames of the functions being run.
	stack []*ast.Term
	// terms are where the evaluation's new terms come from (term).
	terms []ast.Term
	// steps counts calls and iterations, to look at ctx now and then.
	steps int
	// scanners are those of the scans being run (scanning of them) and
	// of earlier, deeper ones, kept for reuse.
	scanners []*scanner
	scanning int
}

// run runs a block's statements until one breaks, returns or fails.
func (e *evaluation) run(l []*ast.Term, b code) int {
	for _, in := range b {
		if r := in(e, l); r != next {
			return r
		}
	}
	return next
}

// fail ends the evaluation with err.
func (e *evaluation) fail(err error) int {
	e.err = err
	return failed
}

// undefined is what a statement whose call gave no value leads to: failed
// when the call failed, else a break out of the block.
func (e *evaluation) undefined() int {
	if e.err != nil {
		return failed
	}
	return 0
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

// scan is a compiled ScanStmt: it runs body for each key and value of the
// source collection, in the order topdown iterates: arrays by index,
// objects and sets sorted.
type scan struct {
	source, key, value ir.Local
	body               code
}

func (s *scan) run(e *evaluation, l []*ast.Term) int {
	src := l[s.source]
	if src == nil {
		return next
	}
	sc := e.scanner()
	sc.locals, sc.s, sc.result = l, s, next
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
	result := sc.result
	sc.locals, sc.s = nil, nil
	e.scanning--
	return result
}

// scanner runs the body of one scan being run. Its callbacks are bound
// once, when it is first needed, so that a scan allocates nothing.
type scanner struct {
	e      *evaluation
	locals []*ast.Term
	s      *scan
	result int
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
		if err := e.ctx.Err(); err != nil {
			sc.result = e.fail(err)
			return true
		}
	}
	sc.locals[sc.s.key], sc.locals[sc.s.value] = k, v
	switch r := e.run(sc.locals, sc.s.body); r {
	case next, 0: // the body held, or broke out of itself: go on
		return false
	case 1: // out of the scan
	case returned, failed:
		sc.result = r
	default: // beyond the block holding the scan
		sc.result = r - 2
	}
	return true
}

// call runs a planned function on the arguments read from the caller's
// locals l; nil is undefined, or failed when e.err is set.
func (e *evaluation) call(fn *function, l []*ast.Term, args []operand) *ast.Term {
	if fn.memo >= 0 && e.memo[fn.memo].done {
		return e.memo[fn.memo].value
	}
	if e.steps++; e.steps%checkEvery == 0 {
		if err := e.ctx.Err(); err != nil {
			e.err = err
			return nil
		}
	}
	// The caller's l stays valid if the stack grows: it keeps the old
	// array, whose values it still reads.
	locals := e.frame(fn.locals)
	for i, p := range fn.params {
		locals[p] = args[i].get(l)
	}
	var v *ast.Term
	for _, b := range fn.code {
		r := e.run(locals, b)
		if r == failed {
			e.pop(fn.locals)
			return nil
		}
		if r == returned {
			v = e.retval
			break
		}
		if r > 0 { // out of the function's body: undefined
			break
		}
	}
	e.pop(fn.locals)
	if fn.memo >= 0 {
		e.memo[fn.memo] = memoEntry{done: true, value: v}
	}
	return v
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
	// Strings and booleans, most of what a plan compares, equal only their
	// own kind (ast.Compare orders kinds apart): compared at once. Numbers
	// (1 equals 1.0) and collections go through ast.Compare.
	switch x := a.Value.(type) {
	case ast.String:
		y, ok := b.Value.(ast.String)
		return ok && x == y
	case ast.Boolean:
		y, ok := b.Value.(ast.Boolean)
		return ok && x == y
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
