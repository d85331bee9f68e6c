package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/tenantguard/tenantguard/internal/registry"
)

// generic decodes JSON text the way the registry's data is made.
func generic(t *testing.T, text string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSharedValueIsTheValueOPABuilds(t *testing.T) {
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	exampleSnap, err := registry.Parse("registry.yaml", example)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data any
	}{
		{"the example registry", exampleSnap.Data()},
		{"a registry of 50 tenants", scaleRegistry(t, 50).Data()},
		{"scalars of every kind, empty collections and repeated ones", generic(t, `{
			"null": null, "yes": true, "no": false, "int": 3, "big": 12345678901234567890, "float": 1.5e3,
			"empty": {}, "none": [], "again": {}, "nested": [[1, "a"], [1, "a"], {"k": [1, "a"]}],
			"labels": {"a": "x", "b": "x", "x": "a"}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := ast.InterfaceToValue(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			got, err := sharedValue(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if got.Compare(want) != 0 || got.String() != want.String() {
				t.Errorf("sharedValue gives\n%v\nwant\n%v", got, want)
			}
		})
	}
}

func TestSharedValueBuildsEqualValuesOnce(t *testing.T) {
	got, err := sharedValue(generic(t, `{
		"t1": {"pods": {"hostPath": false}, "classes": ["gold", "silver"], "owner": "alice"},
		"t2": {"pods": {"hostPath": false}, "classes": ["gold", "silver"], "owner": "alice"},
		"t3": {"pods": {"hostPath": true}, "classes": ["silver", "gold"], "owner": "bob"}}`))
	if err != nil {
		t.Fatal(err)
	}
	at := func(tenant, key string) *ast.Term {
		return got.(ast.Object).Get(ast.StringTerm(tenant)).Value.(ast.Object).Get(ast.StringTerm(key))
	}
	for _, key := range []string{"pods", "classes", "owner"} {
		if at("t1", key) != at("t2", key) {
			t.Errorf("the equal values of %q are two terms", key)
		}
		if at("t1", key) == at("t3", key) {
			t.Errorf("t3's %q, different, is t1's term", key)
		}
	}
	if t1, t2 := got.(ast.Object).Get(ast.StringTerm("t1")), got.(ast.Object).Get(ast.StringTerm("t2")); t1 != t2 {
		t.Error("the equal tenants t1 and t2 are two terms")
	}
	gold := at("t3", "classes").Value.(*ast.Array).Elem(1)
	if at("t1", "classes").Value.(*ast.Array).Elem(0) != gold {
		t.Error(`the string "gold" is two terms`)
	}
}

func TestSharedValueRefusesWhatIsNotJSON(t *testing.T) {
	tests := []struct {
		name string
		data any
		want string
	}{
		{"a number that is not a number", map[string]any{"quota": json.Number("ten")}, `"ten" is not a number`},
		{"a Go value encoding/json does not give", map[string]any{"quota": 10}, "int is not a JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sharedValue(tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one with %q", err, tt.want)
			}
		})
	}
}

// BenchmarkSharedValue is the registry's conversion at load, against OPA's.
func BenchmarkSharedValue(b *testing.B) {
	converters := []struct {
		name    string
		convert func(any) (ast.Value, error)
	}{{"shared", sharedValue}, {"opa", ast.InterfaceToValue}}
	for _, n := range []int{1000, 10000} {
		data := scaleRegistry(b, n).Data()
		for _, c := range converters {
			b.Run(fmt.Sprintf("tenants=%d/converter=%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.convert(data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
