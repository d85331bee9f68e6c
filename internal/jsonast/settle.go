package jsonast

import "github.com/open-policy-agent/opa/v1/ast"

// Settle sorts the keys of v's objects and sets, all the way down, and
// returns v. OPA sorts them in place on first iteration, under a
// sync.Once, but Copy and Union read them without it: a value settled
// before it is shared between goroutines is only ever read.
func Settle(v ast.Value) ast.Value {
	switch v := v.(type) {
	case ast.Object:
		v.Foreach(func(_, e *ast.Term) { Settle(e.Value) })
	case ast.Set:
		v.Foreach(func(e *ast.Term) { Settle(e.Value) })
	case *ast.Array:
		for i := range v.Len() {
			Settle(v.Elem(i).Value)
		}
	}
	return v
}
