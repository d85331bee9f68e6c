package jsonast

import "github.com/open-policy-agent/opa/v1/ast"

// ValueAt is the value at key of obj, which may be nil; nil when there is
// none.
func ValueAt(obj ast.Object, key *ast.Term) ast.Value {
	if obj == nil {
		return nil
	}
	if t := obj.Get(key); t != nil {
		return t.Value
	}
	return nil
}

// ObjectAt is the object at key of obj, which may be nil; nil when there is
// none or the value is not an object.
func ObjectAt(obj ast.Object, key *ast.Term) ast.Object {
	o, _ := ValueAt(obj, key).(ast.Object)
	return o
}

// StringAt is the string at key of obj, which may be nil; "" when there is
// none or the value is not a string.
func StringAt(obj ast.Object, key *ast.Term) string {
	s, _ := ValueAt(obj, key).(ast.String)
	return string(s)
}
