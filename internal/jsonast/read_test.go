package jsonast

import (
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

func TestReadersFindAValueOfTheirKindAtAKey(t *testing.T) {
	doc, err := Parse([]byte(`{"o": {"k": "v"}, "s": "text", "n": 1, "null": null}`))
	if err != nil {
		t.Fatal(err)
	}
	obj := doc.(ast.Object)
	tests := []struct {
		name       string
		obj        ast.Object
		key        string
		value      string // ValueAt's, as JSON; "" for nil
		isObject   bool
		stringWant string
	}{
		{"an object", obj, "o", `{"k": "v"}`, true, ""},
		{"a string", obj, "s", `"text"`, false, "text"},
		{"a number is neither", obj, "n", `1`, false, ""},
		{"null is a value, of neither kind", obj, "null", `null`, false, ""},
		{"an absent key", obj, "absent", "", false, ""},
		{"in no object", nil, "o", "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := ast.StringTerm(tt.key)
			v := ValueAt(tt.obj, key)
			switch {
			case tt.value == "" && v != nil:
				t.Errorf("ValueAt = %v, want nil", v)
			case tt.value != "" && (v == nil || v.Compare(ast.MustParseTerm(tt.value).Value) != 0):
				t.Errorf("ValueAt = %v, want %s", v, tt.value)
			}
			if got := ObjectAt(tt.obj, key); (got != nil) != tt.isObject {
				t.Errorf("ObjectAt = %v, want an object: %t", got, tt.isObject)
			}
			if got := StringAt(tt.obj, key); got != tt.stringWant {
				t.Errorf("StringAt = %q, want %q", got, tt.stringWant)
			}
		})
	}
}
