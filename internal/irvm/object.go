package irvm

import (
	"reflect"
	"sync"
	"unsafe"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Most of a decision's lookups are dots with a key the plan spells out
// (input.request.object, spec.containers): ast.Object's Get hashes the key
// on every call, then compares it with each candidate by its type. A dot
// whose key is a constant string hashes it once, when compiled, and looks
// it up in OPA's object through objectFields (getString).

// objectFields is the layout of the value ast.NewObject makes (*ast.object),
// which OPA keeps unexported: elems chains the elements by their key's hash.
type objectFields struct {
	elems     map[int]*elemFields
	keys      []*elemFields
	ground    int
	hash      int
	sortGuard sync.Once
}

// elemFields is the layout of one element of an object (ast.objectElem).
type elemFields struct {
	key   *ast.Term
	value *ast.Term
	next  *elemFields
}

// objectType is the type word of an interface holding OPA's object; nil
// when it is not laid out as objectFields, and every lookup is Get's.
var objectType = func() unsafe.Pointer {
	o := ast.NewObject()
	if !sameLayout(reflect.TypeOf(o).Elem(), reflect.TypeFor[objectFields]()) {
		return nil
	}
	return typeWord(o)
}()

// typeWord is the word of an interface value that names its dynamic type.
func typeWord(v any) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[0] //nolint:gosec // an interface is two words, its type's first
}

// dataWord is the word of an interface value that points to its value.
func dataWord(v any) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1] //nolint:gosec // an interface is two words, its value's second
}

// stringKey is a constant string key with its hash, computed once.
type stringKey struct {
	term *ast.Term
	str  ast.String
	hash int
}

// newStringKey is the key t, when it holds a string.
func newStringKey(t *ast.Term) (stringKey, bool) {
	s, ok := t.Value.(ast.String)
	if !ok {
		return stringKey{}, false
	}
	return stringKey{term: t, str: s, hash: s.Hash()}, true
}

// getString is obj.Get(k.term).
func getString(obj ast.Object, k stringKey) *ast.Term {
	if objectType == nil || typeWord(obj) != objectType {
		return obj.Get(k.term)
	}
	o := (*objectFields)(dataWord(obj))
	for curr := o.elems[k.hash]; curr != nil; curr = curr.next {
		if curr.key == k.term {
			return curr.value
		}
		if s, ok := curr.key.Value.(ast.String); ok && s == k.str {
			return curr.value
		}
	}
	return nil
}

// constantString is the key of an operand that is a constant string.
func constantString(op operand) (stringKey, bool) {
	if op.local >= 0 || op.term == nil {
		return stringKey{}, false
	}
	return newStringKey(op.term)
}

// pathStep is t.Get(path.Elem(i)): a string key is looked up with the hash
// the array keeps of it.
func pathStep(t *ast.Term, path *ast.Array, i int) *ast.Term {
	key := path.Elem(i)
	obj, ok := t.Value.(ast.Object)
	if !ok {
		return t.Get(key)
	}
	s, ok := key.Value.(ast.String)
	if !ok {
		return obj.Get(key)
	}
	hash := 0
	if inPlace {
		hash = (*arrayFields)(unsafe.Pointer(path)).hashs[i] //nolint:gosec // inPlace checked the layout
	} else {
		hash = key.Hash()
	}
	return getString(obj, stringKey{term: key, str: s, hash: hash})
}
