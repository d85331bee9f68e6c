package irvm

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/ir"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

// program plans query over one Rego v1 module.
func program(tb testing.TB, module, query string) *Program {
	tb.Helper()
	parsed, err := ast.ParseModuleWithOpts("m.rego", module, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		tb.Fatal(err)
	}
	compiler := ast.NewCompiler().WithEvalMode(ast.EvalModeIR)
	if compiler.Compile(map[string]*ast.Module{"m.rego": parsed}); compiler.Failed() {
		tb.Fatal(compiler.Errors)
	}
	policy, err := Plan(tb.Context(), compiler, query)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := New(policy)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// walked is what OPA's topdown evaluator answers: the query's JSON value,
// nil when undefined.
func walked(tb testing.TB, module, query string, input, data map[string]any) (any, error) {
	tb.Helper()
	if data == nil {
		data = map[string]any{}
	}
	rs, err := rego.New(rego.Query(query), rego.Module("m.rego", module), rego.Input(input),
		rego.Store(inmem.NewFromObject(data))).Eval(tb.Context())
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return rs[0].Expressions[0].Value, nil
}

// planned is what the plan answers, as JSON.
func planned(tb testing.TB, ctx context.Context, module, query string, input, data map[string]any) (any, error) {
	tb.Helper()
	v, err := program(tb, module, query).Value(ctx, ast.NewTerm(ast.MustInterfaceToValue(input)), ast.NewTerm(ast.MustInterfaceToValue(data)))
	if err != nil || v == nil {
		return nil, err
	}
	return ast.JSON(v)
}

func TestThePlanAnswersAsTopdown(t *testing.T) {
	tests := []struct {
		name   string
		module string
		input  map[string]any
		data   map[string]any
	}{
		{name: "a complete rule with else branches takes the first that holds", module: `
x := "a" if input.n == 1
else := "b" if input.n == 2
else := "c"`, input: map[string]any{"n": 2}},
		{name: "a partial set collects every element, iterated sorted", module: `
x contains y if some y in input.items
z := [s | some s in x]`, input: map[string]any{"items": []any{"c", "a", "b", "a"}}},
		{name: "a partial object keeps one value per key", module: `
x[k] := v if some k, v in input.m
y := {k | x[k] > 1}`, input: map[string]any{"m": map[string]any{"b": 2, "a": 1, "c": 3}}},
		{name: "negation holds when its body does not", module: `
x := {n | some n in input.ns; not n in {2, 3}}`, input: map[string]any{"ns": []any{1, 2, 3, 4}}},
		{name: "every holds only when each element does", module: `
positive(ns) if every n in ns { n > 0 }
else := false
x := [positive(input.ns), positive(input.bad)]`, input: map[string]any{"ns": []any{1, 2}, "bad": []any{1, -1}}},
		{name: "functions with several bodies and a default", module: `
default f(_) := "other"
f(x) := "small" if x < 10
f(x) := "large" if x >= 100
x := [f(1), f(50), f(1000)]`},
		{name: "with replaces input and data for one expression", module: `
a := input.v
b := data.d.v
w1 := v if v := a with input.v as 2
w2 := v if v := b with data.d.v as "new"
x := [a, w1, w2, b]`, input: map[string]any{"v": 1}, data: map[string]any{"d": map[string]any{"v": "old"}}},
		{name: "a dynamic reference calls the rule at the computed path", module: `
rules.a.v := 1
rules.b.v := 2
rules.c.v := 3 if input.never
x := [rules[k].v | some k in ["b", "c", "a", "none"]]`},
		{name: "rules and base data under one path merge", module: `
q.r := 1
x := data.p.q`, data: map[string]any{"p": map[string]any{"q": map[string]any{"s": 2}}}},
		{name: "rules and base data merge deeply", module: `
q.s.u := 2
x := data.p.q`, data: map[string]any{"p": map[string]any{"q": map[string]any{"s": map[string]any{"t": 1}}}}},
		{name: "arrays and objects unify by position and key", module: `
x := [a, b, c] if {
	[a, b] := input.pair
	{"k": c} := input.obj
}`, input: map[string]any{"pair": []any{1, "two"}, "obj": map[string]any{"k": true}}},
		{name: "iteration over a set from a rule", module: `
s := {n | some n in input.ns}
x := [[k, v] | some k, v in s]`, input: map[string]any{"ns": []any{3, 1, 2}}},
		{name: "values equal only their own kind, and numbers by value", module: `
eq contains [a, b] if {
	some a in input.vs
	some b in input.vs
	a == b
}
ne contains [a, b] if {
	some a in input.vs
	some b in input.vs
	a != b
}
x := [eq, ne]`, input: map[string]any{"vs": []any{"1", 1, 1.0, true, "true", false, nil, "", "a", []any{1}, []any{1.0}, map[string]any{"k": "1"}}}},
		{name: "a dynamic reference reads base data when no rule is there", module: `
x := [data.d[k].v | some k in ["p", "q"]]`, data: map[string]any{"d": map[string]any{"p": map[string]any{"v": "base"}}}},
		{name: "an erroring built-in is undefined, not an error", module: `
x := {"div": 1 / input.zero} if true
else := "undefined"
y := [sprintf("%d", [n]) | some n in [1, 2]]`, input: map[string]any{"zero": 0}},
		{name: "arrays index by number and sets by member", module: `
x := [input.a[1], {1, 2}[2], object.get(input, ["m", "k"], "none")]`, input: map[string]any{"a": []any{"p", "q"}, "m": map[string]any{}}},
		{name: "a string key reads an object's value, a set's member and nothing of an array", module: `
s := {"a", "b"}
x := [input.o.k, input.o["1"], s["a"], {"q"}["q"], [m | m := s["c"]], [e | e := input.arr.k], [v | v := input.o.missing]]`, input: map[string]any{"o": map[string]any{"k": "v", "1": "one"}, "arr": []any{"k"}}},
		{name: "walk gives every path", module: `
x := [p | walk(input, [p, v]); v == 1]`, input: map[string]any{"a": map[string]any{"b": 1}, "c": []any{1}}},
		{name: "numbers compare by value", module: `
x := [1 == 1.0, 2 > 1.5, count("héllo"), 1.5e3 + 1]`},
		{name: "an undefined query is undefined", module: `
x := input.missing`},
		{name: "nested iterations that stop early or go on", module: `
found if {
	some a in input.xs
	some b in input.ys
	a == b
}
pairs := [[a, b] | some a in input.xs; some b in input.ys; a < b]
firsts := {a: b | some a in input.xs; b := [y | some y in input.ys; y > a][0]}
x := [found, pairs, firsts]`, input: map[string]any{"xs": []any{1, 2, 3}, "ys": []any{3, 2}}},
		{name: "collections that stay empty and ones that fill, made in turn", module: `
s(ns) := {n | some n in ns}
o(ns) := {n: true | some n in ns}
a(ns) := [n | some n in ns]
x := [s([]), s(input.ns), s([]), o([]), o(input.ns), o([]), a([]), a(input.ns), a([]), {}, [], set()]`, input: map[string]any{"ns": []any{2, 1}}},
		{name: "a literal merged or passed through a built-in, then read", module: `
d := object.get(input, "none", {"k": ["v"]})
m := object.union({"a": {"b": 1}}, {"a": {"c": 2}})
x := [d, m, d.k, m.a]`, input: map[string]any{}},
		{name: "arrays grown past their first capacity hash and compare as written out", module: `
a := [n | some n in input.ns]
b := [[n, m] | some n in input.ns; some m in [input.ns[0], n]]
c := [input.ns[0], 2, input.ns[2], [input.ns[3]]]
x := [a, count(a), a[8], {a} == {[1, 2, 3, 4, 5, 6, 7, 8, 9]}, {a: 1}[[1, 2, 3, 4, 5, 6, 7, 8, 9]], b, c, c == [1, 2, 3, [4]], a == input.ns]`, input: map[string]any{"ns": []any{1, 2, 3, 4, 5, 6, 7, 8, 9}}},
		{name: "comprehensions over objects and nested arrays", module: `
x := {k: [y | some y in v; y > 1] | some k, v in input.m}`, input: map[string]any{"m": map[string]any{"b": []any{1, 2, 3}, "a": []any{5}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			module := "package p\n" + tt.module
			want, werr := walked(t, module, "data.p.x", tt.input, tt.data)
			got, gerr := planned(t, t.Context(), module, "data.p.x", tt.input, tt.data)
			if werr != nil || gerr != nil {
				t.Fatalf("topdown error %v, plan error %v", werr, gerr)
			}
			if !reflect.DeepEqual(normal(t, got), normal(t, want)) {
				t.Fatalf("plan %v, topdown %v", got, want)
			}
		})
	}
}

func TestSharedConstantsStayAsBuilt(t *testing.T) {
	const module = `package p
kinds := {"Pod", "Job"}
s contains n if some n in input.ns
s contains k if some k in kinds
o[n] := "x" if some n in input.ns
a := [n | some n in input.ns]
u := kinds | {n | some n in input.ns}
x := [s, o, a, object.get({}, "k", []), ["spec", "template"], {"k": "v", "b": true}, kinds, {"c", "d", input.ns[0]}, u]`
	p := program(t, module, "data.p.x")
	want := `[{"Job", "Pod", "a", "b"}, {"a": "x", "b": "x"}, ["a", "b"], [], ["spec", "template"], {"b": true, "k": "v"}, {"Job", "Pod"}, {"a", "c", "d"}, {"Job", "Pod", "a", "b"}]`
	var wg sync.WaitGroup
	for range 4 { // in parallel from the start, for the race detector
		wg.Go(func() {
			for range 50 {
				v, err := p.Value(t.Context(), ast.NewTerm(ast.MustInterfaceToValue(map[string]any{"ns": []any{"a", "b"}})), nil)
				if err != nil || v.String() != want {
					t.Errorf("got %v, %v; want %s", v, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	after, built := constants(p), constants(program(t, module, "data.p.x"))
	if !slices.Contains(built, `{"Job", "Pod"}`) || !slices.Contains(built, `["spec", "template"]`) || !slices.Contains(built, `{"c", "d"}`) {
		t.Fatalf("the literals were not folded: %v", built)
	}
	if !slices.Equal(after, built) {
		t.Fatalf("constants changed from %v to %v", built, after)
	}
	for _, c := range []interface{ Len() int }{emptyArray, emptyObject, emptySet} {
		if c.Len() != 0 {
			t.Fatalf("a shared empty collection was filled: %v", c)
		}
	}
}

// constants are the values of a program's folded literals, sorted.
func constants(p *Program) (out []string) {
	for _, c := range p.folded {
		out = append(out, c.Value.String())
	}
	slices.Sort(out)
	return out
}

// The planner adds to a rule's partial value read back out of the object it
// is building (q[k] contains ... beside q.a := {...}: topdown calls that a
// conflict, the plan merges them). The literal stored there must not be
// shared, or the next evaluation would see the first one's additions.
func TestALiteralReadBackAndAddedToIsNotShared(t *testing.T) {
	p := program(t, `package p
q.a := {"x"}
q[k] contains "z" if k := "a"
q.b := object.get(input, "none", {"y"})
q[k] contains "w" if k := "b"
x := q`, "data.p.x")
	var first string
	for i := range 3 {
		v, err := p.Value(t.Context(), ast.NewTerm(ast.NewObject()), nil)
		if err != nil {
			t.Fatalf("evaluation %d: %v", i, err)
		}
		if i == 0 {
			first = v.String()
		}
		if v.String() != first {
			t.Fatalf("evaluation %d answered %v, the first %s", i, v, first)
		}
	}
	for _, c := range p.folded {
		if s := c.Value.String(); (s == `{"x"}` || s == `{"y"}`) && c.Term != nil {
			t.Errorf("literal %s is shared, yet added to once read back", s)
		}
	}
}

func TestOnlyLiteralsThatAreAddedToGetATermPerEvaluation(t *testing.T) {
	p := program(t, `package p
kinds := {"Pod", "Job"}
grown := {"c", "d", input.ns[0]}
alias := y if {
	y := ["a"]
	y == ["a"]
}
x := [kinds, grown, alias, ["spec", "template"], [n | some n in input.ns]]`, "data.p.x")
	perEvaluation := map[string]bool{}
	for _, c := range p.folded {
		perEvaluation[c.Value.String()] = c.Term == nil
	}
	want := map[string]bool{`{"Job", "Pod"}`: false, `{"c", "d"}`: true, `["a"]`: false, `["spec", "template"]`: false, `[]`: true}
	for literal, own := range want {
		if got, ok := perEvaluation[literal]; !ok || got != own {
			t.Errorf("literal %s: folded %t, a term per evaluation %t; want %t (all: %v)", literal, ok, got, own, perEvaluation)
		}
	}
	v, err := p.Value(t.Context(), ast.NewTerm(ast.MustInterfaceToValue(map[string]any{"ns": []any{"e"}})), nil)
	if err != nil || v.String() != `[{"Job", "Pod"}, {"c", "d", "e"}, ["a"], ["spec", "template"], ["e"]]` {
		t.Fatalf("got %v, %v", v, err)
	}
}

func TestConflictsAreErrorsAsInTopdown(t *testing.T) {
	tests := []struct{ name, module string }{
		{name: "a complete rule with two values", module: "x := 1 if true\nx := 2 if true"},
		{name: "an object rule with two values for a key", module: "x[k] := v if some k, v in {\"a\": 1}\nx[k] := v if some k, v in {\"a\": 2}"},
		{name: "through the rule that calls the rule", module: "c := 1 if true\nc := 2 if true\ny := c + 1\nx := y"},
		{name: "inside a negation", module: "c := 1 if true\nc := 2 if true\nx := true if not c == 5"},
		{name: "inside a with", module: "c := input.a if true\nc := 2 if true\nx := v if v := c with input.a as 1"},
		{name: "through a rule found at run time", module: "r.a.v := 1 if true\nr.a.v := 2 if true\nx := [v | some k in [\"a\"]; v := r[k].v]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			module := "package p\n" + tt.module
			if _, err := walked(t, module, "data.p.x", nil, nil); err == nil {
				t.Fatal("topdown has no conflict: the case is wrong")
			}
			if _, err := planned(t, t.Context(), module, "data.p.x", nil, nil); !errors.Is(err, ErrConflict) {
				t.Fatalf("plan error %v, want a conflict", err)
			}
		})
	}
}

func TestAnEndedContextStopsALongEvaluation(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := planned(t, ctx, "package p\nx := count([n | some n in numbers.range(1, 100000); n % 7 == 0])", "data.p.x", nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want the context's", err)
	}
}

func TestAPooledEvaluationAnswersRightAfterACancelledOne(t *testing.T) {
	module := `package p
x := {a: [b | some b in input.ys; b > a] | some a in input.xs}`
	// Enough iterations that the cancelled evaluations stop inside the
	// inner scan.
	var xs, ys []any
	for i := range 60 {
		xs, ys = append(xs, i), append(ys, 60-i)
	}
	input := map[string]any{"xs": xs, "ys": ys}
	want, err := walked(t, module, "data.p.x", input, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := program(t, module, "data.p.x")
	in, data := ast.NewTerm(ast.MustInterfaceToValue(input)), ast.NewTerm(ast.NewObject())
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	for i := range 3 {
		if _, err := p.Value(cancelled, in, data); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled evaluation %d: error %v", i, err)
		}
		v, err := p.Value(t.Context(), in, data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ast.JSON(v)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(normal(t, got), normal(t, want)) {
			t.Fatalf("after cancelled evaluation %d: plan %v, topdown %v", i, got, want)
		}
	}
}

func TestTheClockIsReadOncePerEvaluation(t *testing.T) {
	p := program(t, `package p
x := [time.now_ns(), count([n | some n in numbers.range(1, 1000)]), time.now_ns()]`, "data.p.x")
	at := func() ast.Value {
		v, err := p.Value(t.Context(), ast.NewTerm(ast.NewObject()), ast.NewTerm(ast.NewObject()))
		if err != nil {
			t.Fatal(err)
		}
		arr := v.(*ast.Array)
		if arr.Elem(0).Value.Compare(arr.Elem(2).Value) != 0 {
			t.Fatalf("time.now_ns changed within one evaluation: %v", v)
		}
		return arr.Elem(0).Value
	}
	first := at()
	time.Sleep(time.Millisecond)
	if second := at(); first.Compare(second) == 0 {
		t.Errorf("the next evaluation kept the clock of the one before: %v", second)
	}
}

// oddStmt is a statement New does not know.
type oddStmt struct{ ir.NopStmt }

func TestNewRefusesWhatItCannotRun(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*ir.Policy)
		wantErr string
	}{
		{name: "a second query plan", wantErr: "2 query plans", change: func(p *ir.Policy) {
			p.Plans.Plans = append(p.Plans.Plans, p.Plans.Plans[0])
		}},
		{name: "a built-in the plan does not declare", wantErr: "built-in no.such is not available", change: func(p *ir.Policy) {
			b := p.Plans.Plans[0].Blocks[0]
			b.Stmts = append([]ir.Stmt{&ir.CallStmt{Func: "no.such", Result: 9}}, b.Stmts...)
		}},
		{name: "a statement it does not know", wantErr: "oddStmt is not supported", change: func(p *ir.Policy) {
			b := p.Plans.Plans[0].Blocks[0]
			b.Stmts = append([]ir.Stmt{&oddStmt{}}, b.Stmts...)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy, err := Plan(t.Context(), ast.NewCompiler().WithEvalMode(ast.EvalModeIR), "x := 1")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := New(policy); err != nil {
				t.Fatalf("the unchanged plan is refused: %v", err)
			}
			tt.change(policy)
			if _, err := New(policy); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// normal round-trips a JSON value through OPA, so numbers compare alike.
func normal(tb testing.TB, v any) any {
	tb.Helper()
	if v == nil {
		return nil
	}
	j, err := ast.JSON(ast.MustInterfaceToValue(v))
	if err != nil {
		tb.Fatal(err)
	}
	return j
}
