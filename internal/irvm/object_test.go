package irvm

import (
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

func TestAStringKeyFindsWhatGetFinds(t *testing.T) {
	objects := []struct {
		name string
		obj  ast.Object
	}{
		{"an empty object", ast.NewObject()},
		{"an object of string keys", ast.MustParseTerm(`{"a": 1, "b": {"c": 2}, "metadata": "m", "": "empty"}`).Value.(ast.Object)},
		{"an object of keys of every kind", ast.MustParseTerm(`{1: "one", "1": "string one", true: "t", null: "n", [1]: "array", "a": "a"}`).Value.(ast.Object)},
		{"an object grown one key at a time", grown(40)},
		{"an object of OPA's lazy kind", ast.LazyObject(map[string]any{"a": 1, "b": map[string]any{"c": 2}})},
	}
	keys := []*ast.Term{
		ast.StringTerm("a"), ast.StringTerm("1"), ast.StringTerm("missing"), ast.StringTerm(""),
		ast.InternedTerm("metadata"), ast.StringTerm("metadata"), ast.StringTerm("k17"), ast.StringTerm("k40"),
	}
	for _, o := range objects {
		t.Run(o.name, func(t *testing.T) {
			found := 0
			for _, key := range keys {
				k, ok := newStringKey(key)
				if !ok {
					t.Fatalf("%v is not a string key", key)
				}
				got, want := getString(o.obj, k), o.obj.Get(key)
				if (got == nil) != (want == nil) || got != nil && !got.Equal(want) {
					t.Errorf("key %v: got %v, Get gives %v", key, got, want)
				}
				if got != nil {
					found++
				}
			}
			if o.obj.Len() > 0 && found == 0 {
				t.Error("no key was found: the case tests nothing")
			}
		})
	}
}

// grown is an object of n keys k0 to k<n-1>, inserted one at a time.
func grown(n int) ast.Object {
	o := ast.NewObject()
	for i := range n {
		o.Insert(ast.StringTerm(fmt.Sprintf("k%02d", i)), ast.InternedTerm(i))
	}
	return o
}
