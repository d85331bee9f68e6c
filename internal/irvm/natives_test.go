package irvm

import (
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// nativeArgs are values of every kind, the edge cases of the natives
// among them: numbers equal in value but not in text, a string of
// multi-byte runes, a key path, collections holding them.
var nativeArgs = []string{
	`null`, `true`, `false`, `0`, `1`, `1.0`, `2`, `-1`, `""`, `"a"`, `"ab"`, `"ba"`, `"é😀"`, `"1"`,
	`[]`, `[1]`, `[1.0, "a"]`, `["a", "b"]`, `{}`, `{"a": 1}`, `{"a": {"b": 2}}`, `{"k": "a"}`,
	`set()`, `{1, "a"}`, `{"a", "b"}`, `["a", "x"]`, `["k", 0]`, `{"k": ["a", {"b": 1}]}`,
	`{"a": {"b": [1, 2]}}`, `["a", "b", 1]`, `{"a": {"b": {1}}}`,
	// sprintf's formats and arguments
	`"%s"`, `"%q"`, `"%d"`, `"count/%s.%s"`, `"%d %q%%"`, `"%v"`, `"%5s"`, `"100%"`,
	`["x\"y\u0001é"]`, `[-3, "a"]`, `[12345678901234567890]`, `[1e3]`,
}

func TestNativesAnswerAsTopdownsBuiltins(t *testing.T) {
	args := make([]*ast.Term, len(nativeArgs))
	for i, s := range nativeArgs {
		args[i] = ast.MustParseTerm(s)
	}
	for name, nat := range natives {
		b := ast.BuiltinMap[name]
		if b == nil {
			t.Fatalf("%s is not a built-in", name)
		}
		arity := len(b.Decl.FuncArgs().Args)
		answered := 0
		for _, in := range combinations(args, arity) {
			got := nat(in)
			if got == nil {
				continue // left to topdown
			}
			answered++
			want, err := callTopdown(name, in)
			if err != nil {
				t.Errorf("%s%v: native %v, topdown fails: %v", name, in, got, err)
				continue
			}
			if !got.Equal(want) {
				t.Errorf("%s%v: native %v, topdown %v", name, in, got, want)
			}
		}
		if answered == 0 {
			t.Errorf("%s: the native answered none of the arguments", name)
		}
	}
}

// combinations are every choice of n values from args, in order, with
// repetition.
func combinations(args []*ast.Term, n int) [][]*ast.Term {
	out := [][]*ast.Term{{}}
	for range n {
		var next [][]*ast.Term
		for _, prefix := range out {
			for _, a := range args {
				next = append(next, append(append([]*ast.Term{}, prefix...), a))
			}
		}
		out = next
	}
	return out
}

func callTopdown(name string, in []*ast.Term) (*ast.Term, error) {
	var out *ast.Term
	err := topdown.GetBuiltin(name)(topdown.BuiltinContext{}, in, func(t *ast.Term) error {
		out = t
		return nil
	})
	if err == nil && out == nil {
		err = fmt.Errorf("no output")
	}
	return out, err
}
