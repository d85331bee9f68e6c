package irvm

import (
	"reflect"
	"unsafe"

	"github.com/open-policy-agent/opa/v1/ast"
)

// An array the plan builds (a comprehension's, or a literal's with a
// variable element) grows by one ArrayAppend at a time. ast.Array.Append
// leaves its array unchanged and returns a new one, which costs an
// allocation per element and another each time the elements outgrow their
// slices. An array this evaluation made itself, which nothing else holds
// yet but the term of its local, is appended to in place instead, as the
// plan's IR means it to be (the Wasm target's arrays grow in place too):
// its term is marked building.

// building marks the term of an array the evaluation made and appends to
// in place.
var building = &ast.Location{File: "irvm: an array this evaluation builds"}

// arrayFields is ast.Array's layout, which it keeps unexported: the
// evaluator appends in place through it only when ast.Array has exactly
// these fields (inPlace), else it calls Append.
type arrayFields struct {
	elems  []*ast.Term
	hashs  []int
	hash   int
	ground bool
}

// inPlace reports whether ast.Array is laid out as arrayFields.
var inPlace = sameLayout(reflect.TypeFor[ast.Array](), reflect.TypeFor[arrayFields]())

// firstCapacity is the capacity of a comprehension's array, made at its
// first element.
const firstCapacity = 4

// appendTo appends v to the array t holds: in place when the evaluation
// builds it, else to a copy, which the evaluation builds from then on.
func appendTo(t *ast.Term, arr *ast.Array, v *ast.Term) {
	if !inPlace {
		thaw(t)
		t.Value = arr.Append(v)
		return
	}
	if t.Location != building {
		// A folded constant, shared: its elements go into an array of
		// the evaluation's own.
		thaw(t)
		own := ast.NewArrayWithCapacity(max(firstCapacity, arr.Len()+1))
		for i := range arr.Len() {
			grow(own, arr.Elem(i))
		}
		t.Value, t.Location = own, building
		arr = own
	}
	grow(arr, v)
}

// grow appends v to arr in place, as Append appends it to its copy.
func grow(arr *ast.Array, v *ast.Term) {
	a := (*arrayFields)(unsafe.Pointer(arr)) //nolint:gosec // inPlace checked the layout
	h := v.Value.Hash()
	a.elems = append(a.elems, v)
	a.hashs = append(a.hashs, h)
	a.hash += h
	a.ground = a.ground && v.IsGround()
}
