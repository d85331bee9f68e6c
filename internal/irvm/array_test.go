package irvm

import (
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

func TestAnArrayGrownInPlaceEqualsOneMadeWhole(t *testing.T) {
	elems := []*ast.Term{ast.IntNumberTerm(1), ast.StringTerm("a"), ast.VarTerm("x"), ast.ObjectTerm(ast.Item(ast.StringTerm("k"), ast.IntNumberTerm(2))), ast.FloatNumberTerm(1.5), ast.NullTerm()}
	for _, start := range []*ast.Term{ast.NewTerm(ast.NewArray()), ast.NewTerm(ast.NewArray(elems[0]))} {
		t.Run(start.String(), func(t *testing.T) {
			constant := start.Value.(*ast.Array)
			term := &ast.Term{Value: constant, Location: frozen}
			from := constant.Len()
			for _, e := range elems[from:] {
				appendTo(term, term.Value.(*ast.Array), e)
			}
			got, want := term.Value.(*ast.Array), ast.NewArray(elems...)
			if got.Compare(want) != 0 || got.Hash() != want.Hash() || got.IsGround() != want.IsGround() {
				t.Fatalf("grown %v (hash %d, ground %t), made whole %v (hash %d, ground %t)", got, got.Hash(), got.IsGround(), want, want.Hash(), want.IsGround())
			}
			if constant.Len() != from {
				t.Fatalf("the frozen constant changed: %v", constant)
			}
			if term.Location != building {
				t.Fatal("the grown array's term is not marked building")
			}
		})
	}
}
