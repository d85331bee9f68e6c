package irvm

import "reflect"

// sameLayout reports whether a and b are laid out alike: the same type, or
// structs with the same fields (name, offset and a type laid out alike, in
// order), or pointers, slices or maps of types laid out alike (a map's key
// of the same type). The evaluator reads OPA's unexported values through
// structs of its own only when they pass it.
func sameLayout(a, b reflect.Type) bool {
	return layoutAlike(a, b, map[[2]reflect.Type]bool{})
}

// layoutAlike is sameLayout, taking pairs already being compared (of a
// type that refers to itself) as alike.
func layoutAlike(a, b reflect.Type, seen map[[2]reflect.Type]bool) bool {
	if a == b {
		return true
	}
	if a.Kind() != b.Kind() || a.Size() != b.Size() {
		return false
	}
	pair := [2]reflect.Type{a, b}
	if seen[pair] {
		return true
	}
	seen[pair] = true
	switch a.Kind() {
	case reflect.Pointer, reflect.Slice:
		return layoutAlike(a.Elem(), b.Elem(), seen)
	case reflect.Map:
		return a.Key() == b.Key() && layoutAlike(a.Elem(), b.Elem(), seen)
	case reflect.Struct:
		if a.NumField() != b.NumField() {
			return false
		}
		for i := range a.NumField() {
			fa, fb := a.Field(i), b.Field(i)
			if fa.Name != fb.Name || fa.Offset != fb.Offset || !layoutAlike(fa.Type, fb.Type, seen) {
				return false
			}
		}
		return true
	}
	return false
}
