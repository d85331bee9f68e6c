package irvm

import (
	"reflect"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

func TestOPAsValuesAreReadThroughLayoutsOfOurOwnOnlyWhenAlike(t *testing.T) {
	if !inPlace {
		t.Error("ast.Array is no longer laid out as arrayFields: update arrayFields to OPA's, or arrays are built by copies")
	}
	if objectType == nil {
		t.Error("OPA's object is no longer laid out as objectFields: update objectFields to OPA's, or every lookup is Get's")
	}
	tests := []struct {
		name      string
		opa, ours reflect.Type
	}{
		{"ast.Array and arrayFields", reflect.TypeFor[ast.Array](), reflect.TypeFor[arrayFields]()},
		{"OPA's object and objectFields", reflect.TypeOf(ast.NewObject()).Elem(), reflect.TypeFor[objectFields]()},
		{"OPA's object element and elemFields", reflect.TypeOf(ast.NewObject()).Elem().Field(0).Type.Elem().Elem(), reflect.TypeFor[elemFields]()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !sameLayout(tt.opa, tt.ours) {
				t.Fatal("not laid out alike")
			}
			fields := reflect.VisibleFields(tt.ours)
			// Structs that differ from ours in one field: left out,
			// renamed, or of another type of the same size.
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
							g.Type = sameSize(t, f.Type)
						}
						changed = append(changed, g)
					}
					if sameLayout(tt.opa, reflect.StructOf(changed)) {
						t.Errorf("a struct with field %s %s is laid out as OPA's", fields[i].Name, change)
					}
				}
			}
		})
	}
}

// sameSize is a type of the size of t laid out otherwise: for a pointer,
// slice or map, one to values of another layout.
func sameSize(t *testing.T, typ reflect.Type) reflect.Type {
	t.Helper()
	other := map[reflect.Kind]reflect.Type{
		reflect.Pointer: reflect.TypeFor[*uintptr](), reflect.Slice: reflect.TypeFor[[]uintptr](),
		reflect.Map: reflect.TypeFor[map[int]uintptr](), reflect.Int: reflect.TypeFor[uint](),
		reflect.Bool: reflect.TypeFor[uint8](), reflect.Struct: reflect.ArrayOf(int(typ.Size()), reflect.TypeFor[byte]()),
	}[typ.Kind()]
	if other == nil || other.Size() != typ.Size() {
		t.Fatalf("no other type of the size of %v", typ)
	}
	return other
}
