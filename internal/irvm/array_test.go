package irvm

import (
	"reflect"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

func TestArraysAreAppendedToInPlaceOnlyWithOPAsLayout(t *testing.T) {
	if !inPlace {
		t.Fatal("ast.Array is no longer laid out as arrayFields: update arrayFields to OPA's, or arrays are built by copies")
	}
	fields := reflect.VisibleFields(reflect.TypeFor[arrayFields]())
	// Structs that differ from arrayFields in one field: left out, renamed,
	// or of another type of the same size.
	otherType := map[reflect.Kind]reflect.Type{
		reflect.Slice: reflect.TypeFor[[]uintptr](), reflect.Int: reflect.TypeFor[uint](), reflect.Bool: reflect.TypeFor[uint8](),
	}
	for i := range fields {
		for _, change := range []string{"left out", "renamed", "of another type"} {
			var changed []reflect.StructField
			for j, f := range fields {
				g := reflect.StructField{Name: f.Name, PkgPath: f.PkgPath, Type: f.Type}
				switch {
				case j != i:
				case change == "left out":
					continue
				case change == "renamed":
					g.Name += "2"
				default:
					g.Type = otherType[f.Type.Kind()]
				}
				changed = append(changed, g)
			}
			if sameFields(reflect.TypeFor[ast.Array](), reflect.StructOf(changed)) {
				t.Errorf("a struct with field %s %s has ast.Array's fields", fields[i].Name, change)
			}
		}
	}
}

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
