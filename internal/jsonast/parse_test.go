package jsonast

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// reference is what the engine did before this package: encoding/json with
// UseNumber, the dropped path deleted, then ast.InterfaceToValue.
func reference(data []byte, drop ...string) (ast.Value, bool) {
	if !json.Valid(data) || !numbersInRange(data) {
		return nil, false
	}
	return decodeThenConvert(data, drop...)
}

// decodeThenConvert is the engine's former decoding of an object:
// encoding/json with UseNumber, the dropped path deleted, InterfaceToValue.
func decodeThenConvert(data []byte, drop ...string) (ast.Value, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if len(drop) > 0 {
		parent := v
		for _, key := range drop[:len(drop)-1] {
			m, _ := parent.(map[string]any)
			parent = m[key]
		}
		if m, ok := parent.(map[string]any); ok {
			delete(m, drop[len(drop)-1])
		}
	}
	value, err := ast.InterfaceToValue(v)
	if err != nil {
		return nil, false
	}
	return value, true
}

// numbersInRange reports whether every number of a valid document passes
// ast.NumberChecked, as InterfaceToValue requires of those it converts;
// jsonast checks those it drops too.
func numbersInRange(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		if n, ok := tok.(json.Number); ok {
			if _, err := ast.NumberChecked(string(n)); err != nil {
				return false
			}
		}
	}
}

func TestParseGivesTheValuesOfEncodingJSONAndInterfaceToValue(t *testing.T) {
	tests := []struct {
		name string
		json string
		drop []string
	}{
		{"a nested object", `{"a": {"b": [1, 2.5, -3e2, "x"]}, "c": true, "d": null, "e": false}`, nil},
		{"numbers that keep their text", `[12345678901234567890, 1.0, 0, -0, 1E+2, 0.000001]`, nil},
		{"escapes and unicode", `["a\"b\\c\/d\n\t\u00e9\ud83d\ude00", "plain é 😀"]`, nil},
		{"invalid UTF-8 in a string", "[\"a\xffb\", \"\xc3\"]", nil},
		{"duplicate keys, the last winning", `{"a": 1, "b": 2, "a": 3}`, nil},
		{"many keys with a duplicate", `{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k1":0}`, nil},
		{"empty containers", `{"a": {}, "b": [], "c": ""}`, nil},
		{"a scalar document", ` "text" `, nil},
		{"a dropped path", `{"metadata": {"name": "p", "managedFields": [{"manager": "kubectl"}]}, "spec": {}}`, []string{"metadata", "managedFields"}},
		{"a dropped path that is absent", `{"metadata": {"name": "p"}}`, []string{"metadata", "managedFields"}},
		{"a dropped path under a non-object", `{"metadata": ["managedFields"]}`, []string{"metadata", "managedFields"}},
		{"duplicate keys around a dropped path", `{"metadata": {"managedFields": 1, "name": "a", "managedFields": 2, "name": "b"}}`, []string{"metadata", "managedFields"}},
		{"exponents in range", `[1e5, -2E-10, 1e+308]`, nil},
		{"a dropped key only at its place", `{"managedFields": 1, "metadata": {"spec": {"managedFields": 2}}}`, []string{"metadata", "managedFields"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, ok := reference([]byte(tt.json), tt.drop...)
			if !ok {
				t.Fatalf("the reference refuses %s", tt.json)
			}
			got, err := Parse([]byte(tt.json), tt.drop...)
			if err != nil {
				t.Fatal(err)
			}
			if got.Compare(want) != 0 {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestParsePathsDropsSeveralPathsAndRecordsSpans(t *testing.T) {
	review := `{"request": {"uid": "u", "object": {"metadata": {"name": "p", "managedFields": [1]}},` +
		` "oldObject" :  {"metadata": {"managedFields": [2], "name": "q"}} , "x": {"object": 3}}}`
	paths := []Path{
		{Keys: []string{"request", "object", "metadata", "managedFields"}, Drop: true},
		{Keys: []string{"request", "oldObject", "metadata", "managedFields"}, Drop: true},
		{Keys: []string{"request", "object"}},
		{Keys: []string{"request", "oldObject"}},
		{Keys: []string{"request", "missing"}},
		{},
		{Keys: []string{"request", "object"}},
	}
	spans := make([]Span, len(paths))
	got, err := ParsePaths([]byte(review), paths, spans)
	if err != nil {
		t.Fatal(err)
	}
	want := ast.MustParseTerm(`{"request": {"uid": "u", "object": {"metadata": {"name": "p"}}, "oldObject": {"metadata": {"name": "q"}}, "x": {"object": 3}}}`).Value
	if got.Compare(want) != 0 {
		t.Errorf("got %v, want %v", got, want)
	}
	wantSpans := map[int]string{
		2: `{"metadata": {"name": "p", "managedFields": [1]}}`,
		3: `{"metadata": {"managedFields": [2], "name": "q"}}`,
		6: `{"metadata": {"name": "p", "managedFields": [1]}}`,
	}
	for i, span := range spans {
		if text := review[span.Start:span.End]; text != wantSpans[i] {
			t.Errorf("span of %v is %q, want %q", paths[i].Keys, text, wantSpans[i])
		}
	}
}

func TestPathsStepIntoEveryElementOfAnArray(t *testing.T) {
	list := `{"metadata": {"continue": "c"}, "items": [` +
		`{"metadata": {"name": "a", "managedFields": [{"manager": "m"}]}, "spec": {"x": [{"managedFields": 1}]}},` +
		`{"metadata": {"name": "b"}}, [{"metadata": {"managedFields": 2}}], 3, "s"],` +
		` "*": {"metadata": {"managedFields": 4}}, "other": [{"metadata": {"managedFields": 5}}]}`
	paths := []Path{
		{Keys: []string{"items", Every, "metadata", "managedFields"}, Drop: true},
		{Keys: []string{"items", Every, Every, "metadata", "managedFields"}, Drop: true},
		{Keys: []string{"items", Every}},                                 // ends with Every: ignored
		{Keys: []string{Every, "metadata", "managedFields"}, Drop: true}, // the root is no array: its key "*" is kept
	}
	for _, tt := range []struct {
		name  string
		parse func() (ast.Value, error)
	}{
		{"without a cache", func() (ast.Value, error) { return ParsePaths([]byte(list), paths, nil) }},
		{"with a cache, twice", func() (ast.Value, error) {
			c := NewCache(16)
			if _, err := c.ParsePaths([]byte(list), paths, nil); err != nil {
				return nil, err
			}
			return c.ParsePaths([]byte(list), paths, nil)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.parse()
			if err != nil {
				t.Fatal(err)
			}
			want := ast.MustParseTerm(`{"metadata": {"continue": "c"}, "items": [` +
				`{"metadata": {"name": "a"}, "spec": {"x": [{"managedFields": 1}]}},` +
				`{"metadata": {"name": "b"}}, [{"metadata": {}}], 3, "s"],` +
				` "*": {"metadata": {"managedFields": 4}}, "other": [{"metadata": {"managedFields": 5}}]}`).Value
			if got.Compare(want) != 0 {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestParsePathsRefusesMorePathsThanItFollows(t *testing.T) {
	if _, err := ParsePaths([]byte(`{}`), make([]Path, MaxPaths+1), nil); err == nil {
		t.Fatal("a path past MaxPaths would be silently ignored")
	}
}

func TestParseRefusesWhatIsNotJSON(t *testing.T) {
	tests := []struct{ name, json string }{
		{"nothing", ""},
		{"spaces", "  "},
		{"an unclosed object", `{"a": 1`},
		{"an unclosed array", `[1, 2`},
		{"an unclosed string", `"abc`},
		{"a trailing comma", `[1, 2,]`},
		{"a key that is not a string", `{a: 1}`},
		{"a missing colon", `{"a" 1}`},
		{"two values", `{} {}`},
		{"a leading zero", `01`},
		{"a bare minus", `-`},
		{"a dot without digits", `1.`},
		{"an exponent without digits", `1e+`},
		{"a control character in a string", "\"a\tb\""},
		{"a bad escape", `"\x"`},
		{"a short unicode escape", `"\u12"`},
		{"a misspelled literal", `tru`},
		{"a backslash at the end", `"\`},
		{"nesting past the limit", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)},
		{"objects nested past the limit", strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)},
		{"a huge exponent", `1e100000`},
		{"a huge negative exponent", `-1E-100000`},
		{"a huge exponent in the dropped path", `{"metadata": {"managedFields": [1e100000]}}`},
		{"a huge exponent overwritten by a duplicate key", `{"a": 1e999999, "a": 1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := reference([]byte(tt.json)); ok {
				t.Fatalf("the reference accepts %q", tt.json)
			}
			if v, err := Parse([]byte(tt.json), "metadata", "managedFields"); err == nil {
				t.Errorf("Parse accepted %q as %v", tt.json, v)
			}
		})
	}
}

func TestParseAcceptsNestingUpToTheLimit(t *testing.T) {
	doc := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := Parse([]byte(doc)); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseDecodesAsEncodingJSON holds Parse to the reference on any input:
// both accept it with equal values, or both refuse it.
func FuzzParseDecodesAsEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		`{"metadata": {"name": "p", "managedFields": [{"f": 1}]}, "spec": {"containers": [{"name": "c", "image": "i"}]}}`,
		`[1, -2.5e3, "a\u00e9\n", true, false, null, {}, []]`,
		`{"a": 1, "a": 2}`, "\"\xff\"", `01`, `[1,]`,
		`{"a": 1e100000, "a": 1}`, `{"a\u0062": 1, "ab": 2}`, `-0`,
	} {
		f.Add([]byte(seed))
	}
	cache := NewCache(16)
	f.Fuzz(func(t *testing.T, data []byte) {
		// Twice in one document, and three times with the cache, so that
		// values are cached and handed out again, within the document and
		// from the previous inputs'.
		twice := slices.Concat([]byte("["), data, []byte(","), data, []byte("]"))
		for _, doc := range [][]byte{data, twice} {
			for _, drop := range [][]string{nil, {"metadata", "managedFields"}} {
				want, ok := reference(bytes.Clone(doc), drop...)
				paths := []Path{{Keys: drop, Drop: true}}
				for i := range 4 {
					var got ast.Value
					var err error
					if i == 0 {
						got, err = ParsePaths(doc, paths, nil)
					} else {
						got, err = cache.ParsePaths(doc, paths, nil)
					}
					if ok != (err == nil) {
						t.Fatalf("reference ok %v, parse %d error %v, on %q", ok, i, err, doc)
					}
					if ok && got.Compare(want) != 0 {
						t.Fatalf("parse %d got %v, want %v, on %q", i, got, want, doc)
					}
				}
			}
		}
	})
}

// BenchmarkParse decodes a Pod of the size the API server sends, managed
// fields dropped, against encoding/json and InterfaceToValue.
func BenchmarkParse(b *testing.B) {
	pod := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7d4b9c","namespace":"oil-dev","labels":{"app":"web","pod-template-hash":"7d4b9c"},"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{}}}}}}]},"spec":{"containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{"requests":{"cpu":"100m","memory":"128Mi"}},"volumeMounts":[{"name":"data","mountPath":"/data"}]}],"volumes":[{"name":"data","emptyDir":{}}],"priorityClassName":"tenant-default","restartPolicy":"Always"}}`)
	b.Run("jsonast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse(pod, "metadata", "managedFields"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json+InterfaceToValue", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := decodeThenConvert(pod, "metadata", "managedFields"); !ok {
				b.Fatal("refused")
			}
		}
	})
}

// Interned by the tests, at initialization as Intern requires.
func init() { Intern("internedByTheTests") }

func TestParseHandsOutTheInternedTermOfAnInternedString(t *testing.T) {
	v, err := Parse([]byte(`{"internedByTheTests":"internedByTheTests","1":"internedByTheTestsToo"}`))
	if err != nil {
		t.Fatal(err)
	}
	terms := map[string][2]*ast.Term{}
	v.(ast.Object).Foreach(func(k, v *ast.Term) { terms[string(k.Value.(ast.String))] = [2]*ast.Term{k, v} })
	shared := ast.InternedTerm("internedByTheTests")
	if kv := terms["internedByTheTests"]; kv[0] != shared || kv[1] != shared {
		t.Error("the interned string's key and value are not the interned term")
	}
	// OPA interns "1" itself; only strings given to Intern are shared.
	if !ast.HasInternedValue("1") || terms["1"][0] == ast.InternedTerm("1") {
		t.Error("a string interned by OPA but not by Intern got OPA's term")
	}
	if v := terms["1"][1]; v.Value.(ast.String) != "internedByTheTestsToo" {
		t.Errorf("a string longer than every interned one = %v", v)
	}
}

func TestValuesKeepTheirMembersWhenLaterParsesReuseTheStacks(t *testing.T) {
	first := []byte(`{"a":{"b":[1,2,{"c":"d"}],"e":{"f":"g","h":["i"]}},"j":[[1],[2,3]]}`)
	later := [][]byte{
		[]byte(`{"x":{"y":[9,8,7,6,5],"z":{"w":"v"}},"u":[["t"],["s","r"]]}`),
		[]byte(`[{"a":1,"b":2,"c":3,"d":4},[5,6,7,8,9,10]]`),
	}
	v, err := ParsePaths(first, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, ok := reference(first)
	if !ok {
		t.Fatal("the reference refused the text")
	}
	for _, data := range later {
		if _, err := ParsePaths(data, nil, nil); err != nil {
			t.Fatal(err)
		}
		if v.Compare(want) != 0 {
			t.Fatalf("after parsing %s, the first value is %v; want %v", data, v, want)
		}
	}
}
