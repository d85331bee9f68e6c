package jsonast

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/open-policy-agent/opa/v1/ast"
)

// testSlots makes a collision of two texts' slots, which would change what
// a test sees cached, about one chance in 10,000 per pair.
const testSlots = 1 << 16

// parseCached parses data with c.
func parseCached(t *testing.T, c *Cache, data string) ast.Value {
	t.Helper()
	v, err := c.ParsePaths([]byte(data), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// at is the term at path in v.
func at(t *testing.T, v ast.Value, path ...string) *ast.Term {
	t.Helper()
	term := ast.NewTerm(v)
	for _, k := range path {
		obj, ok := term.Value.(ast.Object)
		if !ok {
			t.Fatalf("no object at %q of %v", k, v)
		}
		if term = obj.Get(ast.StringTerm(k)); term == nil {
			t.Fatalf("no %q in %v", k, obj)
		}
	}
	return term
}

func TestCacheHandsOutTheValueOfATextThatMissedTwice(t *testing.T) {
	c := NewCache(testSlots)
	doc := func(name string) string {
		return `{"metadata": {"name": "` + name + `"}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}`
	}
	first := parseCached(t, c, doc("a"))
	second := parseCached(t, c, doc("b"))
	third := parseCached(t, c, doc("c"))
	fourth := parseCached(t, c, doc("d"))
	for i, v := range []ast.Value{first, second, third, fourth} {
		want, _ := reference([]byte(doc(string(rune('a' + i)))))
		if v.Compare(want) != 0 {
			t.Errorf("parse %d gave %v, want %v", i+1, v, want)
		}
	}
	if at(t, first, "spec") == at(t, second, "spec") {
		t.Error("a text seen once is shared")
	}
	if at(t, third, "spec") != at(t, fourth, "spec") {
		t.Error("a text that missed twice is not handed out again")
	}
	if at(t, third, "spec") == at(t, second, "spec") {
		t.Error("the value cached is the one of the parse that missed, whose strings share its input")
	}
	if at(t, third, "metadata") == at(t, fourth, "metadata") {
		t.Error("different texts share a value")
	}
}

func TestCacheKeepsNoReferenceToTheInput(t *testing.T) {
	c := NewCache(testSlots)
	text := `{"labels": {"app": "web"}}`
	buffers := make([][]byte, 3)
	for i := range buffers {
		buffers[i] = []byte(text)
		if _, err := c.ParsePaths(buffers[i], nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range buffers {
		copy(b, bytes.Repeat([]byte("x"), len(b)))
	}
	v := parseCached(t, c, text)
	if want := ast.MustParseTerm(text).Value; v.Compare(want) != 0 {
		t.Errorf("after the inputs were overwritten, the cached value is %v, want %v", v, want)
	}
	// Its strings lie in the cache's own copy of the text.
	var e *cached
	for i := range c.slots {
		if got := c.slots[i].entry.Load(); got != nil && got.text == text {
			e = got
		}
	}
	if e == nil || e.term.Value != v {
		t.Fatal("the text is not cached")
	}
	web := string(at(t, v, "labels", "app").Value.(ast.String))
	start := uintptr(unsafe.Pointer(unsafe.StringData(e.text)))
	if p := uintptr(unsafe.Pointer(unsafe.StringData(web))); p < start || p >= start+uintptr(len(e.text)) {
		t.Error("a cached string lies outside the cache's copy of the text")
	}
}

func TestCacheParsesWithoutCopyingTheInputButParsePathsCopiesIt(t *testing.T) {
	data := []byte(`{"labels": {"app": "web"}}`)
	inData := func(v ast.Value) bool {
		s := string(at(t, v, "labels", "app").Value.(ast.String))
		start := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return p >= start && p < start+uintptr(len(data))
	}
	shared, err := NewCache(testSlots).ParsePaths(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !inData(shared) {
		t.Error("the cache's parse copied its input: a string does not lie in it")
	}
	copied, err := ParsePaths(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if inData(copied) {
		t.Error("ParsePaths did not copy its input: a string lies in it")
	}
}

func TestCacheLeavesThePathsAlone(t *testing.T) {
	c := NewCache(testSlots)
	// The object's text repeats under "same", where no path leads: there
	// it may come from the cache, but on the paths the managed fields are
	// still dropped and the object's span still recorded.
	review := `{"object": {"metadata": {"managedFields": [{"m": 1}]}}, "same": {"metadata": {"managedFields": [{"m": 1}]}}}`
	paths := []Path{
		{Keys: []string{"object", "metadata", "managedFields"}, Drop: true},
		{Keys: []string{"object"}},
	}
	for range 4 {
		spans := make([]Span, len(paths))
		v, err := c.ParsePaths([]byte(review), paths, spans)
		if err != nil {
			t.Fatal(err)
		}
		want := ast.MustParseTerm(`{"object": {"metadata": {}}, "same": {"metadata": {"managedFields": [{"m": 1}]}}}`).Value
		if v.Compare(want) != 0 {
			t.Fatalf("got %v, want %v", v, want)
		}
		if got := review[spans[1].Start:spans[1].End]; got != `{"metadata": {"managedFields": [{"m": 1}]}}` {
			t.Fatalf("the object's span is %q", got)
		}
	}
}

// nestedIn is text levels deep in objects under key "a", and the path to
// it: the objects around it are on the path, so they are not looked up in
// the cache (nor spend the parse's scanning budget).
func nestedIn(levels int, text string) ([]byte, []Path) {
	doc := strings.Repeat(`{"a":`, levels) + text + strings.Repeat("}", levels)
	keys := make([]string, levels)
	for i := range keys {
		keys[i] = "a"
	}
	return []byte(doc), []Path{{Keys: keys}}
}

// cachedTwice caches text and returns its cached value.
func cachedTwice(t *testing.T, c *Cache, text string) ast.Value {
	t.Helper()
	parseCached(t, c, text)
	parseCached(t, c, text)
	if v := parseCached(t, c, text); v == parseCached(t, c, text) {
		return v
	}
	t.Fatalf("%s is not cached", text)
	return nil
}

func TestCacheRefusesAValueNestedPastTheLimit(t *testing.T) {
	tests := []struct {
		name, text string
		depth      int // of the text
	}{
		{"arrays", `[[[1]]]`, 3},
		{"a key given twice, its first value the deeper", `{"a": [[[1]]], "a": 1}`, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache(testSlots)
			cached := cachedTwice(t, c, tt.text)
			doc, paths := nestedIn(MaxDepth-tt.depth+1, tt.text)
			if _, err := c.ParsePaths(doc, paths, nil); err == nil {
				t.Error("a cached value took the nesting past the limit")
			}
			doc, paths = nestedIn(MaxDepth-tt.depth, tt.text)
			v, err := c.ParsePaths(doc, paths, nil)
			if err != nil {
				t.Fatalf("a cached value at the limit: %v", err)
			}
			for range MaxDepth - tt.depth {
				v = v.(ast.Object).Get(ast.StringTerm("a")).Value
			}
			if v != cached {
				t.Error("the value at the limit does not come from the cache")
			}
		})
	}
}

func TestCacheStopsLookingUpOnceAParseHasScannedTwiceItsLength(t *testing.T) {
	c := NewCache(testSlots)
	small := `{"cached": true}`
	cached := cachedTwice(t, c, small)
	// Each of the arrays around it scans ahead up to MaxCachedText bytes
	// to be looked up, far more than twice the document's length in all.
	const levels = 300
	deep := strings.Repeat("[", levels) + small + strings.Repeat("]", levels)
	v, err := c.ParsePaths([]byte(deep), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range levels {
		v = v.(*ast.Array).Elem(0).Value
	}
	if v == cached || v.Compare(cached) != 0 {
		t.Errorf("the value %v was looked up past the budget", v)
	}
	shallow, err := c.ParsePaths([]byte("[["+small+"]]"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if shallow.(*ast.Array).Elem(0).Value.(*ast.Array).Elem(0).Value != cached {
		t.Error("within the budget, the value is not looked up")
	}
}

func TestCacheKeepsNoValueOfManyTerms(t *testing.T) {
	c := NewCache(testSlots)
	many := "[" + strings.Repeat(`{},`, MaxCachedTerms) + "{}]"
	few := "[" + strings.Repeat(`{},`, MaxCachedTerms-2) + "{}]"
	for range 3 {
		parseCached(t, c, many)
		parseCached(t, c, few)
	}
	if parseCached(t, c, many) == parseCached(t, c, many) {
		t.Errorf("a value of %d terms is cached", MaxCachedTerms+2)
	}
	if parseCached(t, c, few) != parseCached(t, c, few) {
		t.Errorf("a value of %d terms is not cached", MaxCachedTerms)
	}
}

func TestCacheKeepsAValueHitOftenAgainstOtherTexts(t *testing.T) {
	c := NewCache(1)
	hot, cold := `{"hot": true}`, `{"cold": true}`
	parseCached(t, c, hot)
	parseCached(t, c, hot) // missed twice: cached
	first := parseCached(t, c, hot)
	for range 3 {
		parseCached(t, c, hot) // 4 hits in all
	}
	for range 3 {
		parseCached(t, c, cold) // each miss costs hot a hit: 1 left
	}
	if parseCached(t, c, hot) != first { // 2 hits
		t.Fatal("a value hit 4 times lost its slot to 3 misses")
	}
	for range 2 {
		parseCached(t, c, cold) // no hits left
	}
	parseCached(t, c, cold)
	parseCached(t, c, cold) // missed twice: cached
	if parseCached(t, c, cold) != parseCached(t, c, cold) {
		t.Error("a text that kept missing never took the slot of a value no longer hit")
	}
	if parseCached(t, c, hot) == first {
		t.Error("the slot holds two values")
	}
}

func TestCacheIsNotUsedWithoutOne(t *testing.T) {
	var c *Cache
	text := `{"a": [1]}`
	v := parseCached(t, c, text)
	if w := parseCached(t, c, text); at(t, v, "a") == at(t, w, "a") {
		t.Error("a nil cache shares values")
	}
}

func TestSkipFindsTheEndOfAContainer(t *testing.T) {
	tests := []struct {
		name, text string
		limit, end int
	}{
		{"an object", `{"a": 1} tail`, 100, 8},
		{"brackets in strings", `["]", "}", "\"]"] tail`, 100, 17},
		{"nested containers", `{"a": [{"b": {}}]}`, 100, 18},
		{"longer than the limit", `{"a": 1}`, 7, -1},
		{"at the limit", `{"a": 1}`, 8, 8},
		{"no end", `{"a": [1}`, 100, -1},
		{"an escape at the end", `["\`, 100, -1},
		{"an escaped backslash before the closing quote", `["a\\", "]"] tail`, 100, 12},
		{"three backslashes escape the quote", `["\\\"]"] tail`, 100, 9},
		{"a string whose end is past the limit", `["abc"]`, 4, -1},
		{"a closing quote past the limit, after a bracket", `["a]"]`, 4, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := skip([]byte(tt.text), 0, tt.limit, nil); got != tt.end {
				t.Errorf("skip(%q, %d) = %d, want %d", tt.text, tt.limit, got, tt.end)
			}
		})
	}
}

func TestSkipNotesTheEndsOfTheContainersItPasses(t *testing.T) {
	tests := []struct {
		name, text string
		limit      int
	}{
		{"nested objects and arrays", `{"a": [{"b": {}}, [1, [2]]], "c": {"d": "}"}} tail`, 100},
		{"brackets in strings", `[{"x": "[{"}, ["\"]"]]`, 100},
		{"a scan stopped by the limit", `{"a": {"b": 1}, "c": {"d": [1, 2, 3]}}`, 20},
		{"deeper than the levels noted", strings.Repeat("[", 20) + strings.Repeat("]", 20), 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.text)
			var m endMemo
			skip(data, 0, tt.limit, &m)
			noted := 0
			for start := 1; start < len(data); start++ {
				end := m.end(start)
				if end < 0 {
					continue
				}
				noted++
				if want := skip(data, start, len(data), nil); end != want {
					t.Errorf("the container at %d: noted end %d, skip finds %d", start, end, want)
				}
			}
			if noted == 0 {
				t.Error("no end noted")
			}
			if m.end(0) >= 0 {
				t.Error("the container looked up itself is noted")
			}
		})
	}
}

func TestCacheIsSafeForParsesAtOnce(t *testing.T) {
	c := NewCache(4)
	docs := []string{
		`{"spec": {"containers": [{"name": "web", "ports": [{"containerPort": 80}]}]}, "n": 1}`,
		`{"spec": {"containers": [{"name": "web", "ports": [{"containerPort": 80}]}]}, "n": 2}`,
		`{"spec": {"b": "2", "a": "1"}, "list": [{"z": 1, "y": 2}]}`,
		`{"spec": {"z": 1, "y": 2}, "list": [{"b": "2", "a": "1"}]}`,
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				doc := docs[(g+i)%len(docs)]
				v, err := c.ParsePaths([]byte(doc), nil, nil)
				if err != nil {
					t.Error(err)
					return
				}
				// Copy reads the keys while another parse's String may
				// sort them, unless they are settled.
				if o, ok := v.(ast.Object); ok {
					o.Get(ast.StringTerm("spec")).Value.(ast.Object).Copy()
				}
				if want := ast.MustParseTerm(doc).Value; v.Compare(want) != 0 || v.String() != want.String() {
					t.Errorf("got %v, want %v", v, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
