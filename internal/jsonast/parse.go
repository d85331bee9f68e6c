package jsonast

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
)

// MaxDepth is the deepest nesting accepted, encoding/json's limit.
const MaxDepth = 10000

// Parse decodes one JSON value. drop is a path of object keys from the root
// (such as "metadata", "managedFields") whose value is checked but left out
// of the result: the parts of a document nobody reads cost no allocation.
func Parse(data []byte, drop ...string) (ast.Value, error) {
	return ParsePaths(data, []Path{{Keys: drop, Drop: true}}, nil)
}

// Path is a path of object keys from the root and what ParsePaths does with
// the value found there. A key Every steps into each element of an array,
// and into no object's member; a path must not end with it.
type Path struct {
	Keys []string
	// Drop leaves the value out of the result; it is still checked.
	// Otherwise the value is built and its span recorded.
	Drop bool
}

// Every is the key of a Path that steps into each element of an array: the
// path {"items", Every, "metadata", "managedFields"} drops the managed
// fields of every object of a list.
const Every = "*"

// Span is where a value's text lies in the input: data[Start:End]. A path
// with no value has the zero Span.
type Span struct{ Start, End int }

// MaxPaths is how many paths one ParsePaths call follows.
const MaxPaths = 64

// ParsePaths is Parse with several paths (at most MaxPaths; a path of no
// keys is ignored): spans[i], when spans is at least as long as paths,
// receives the span of the value at paths[i] unless paths[i] drops it.
func ParsePaths(data []byte, paths []Path, spans []Span) (ast.Value, error) {
	return parse(data, string(data), paths, spans, nil)
}

// parse is ParsePaths with a cache, nil for none; src is data as a string,
// which the values' strings are cut from.
func parse(data []byte, src string, paths []Path, spans []Span, cache *Cache) (ast.Value, error) {
	if len(paths) > MaxPaths {
		return nil, fmt.Errorf("%d paths, more than %d", len(paths), MaxPaths)
	}
	st := stacksPool.Get().(*stacks)
	p := parser{data: data, src: src, paths: paths, spans: spans, cache: cache, scan: scanBudget(len(data)), pairs: st.pairs, elems: st.elems}
	defer func() { st.put(p.pairs, p.elems) }()
	var mask uint64
	for i, path := range paths {
		if len(path.Keys) > 0 {
			mask |= 1 << i
		}
	}
	t, err := p.value(mask, 0, 0, true)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.data) {
		return nil, p.errorf("unexpected %q after the value", p.data[p.pos])
	}
	return t.Value, nil
}

// parser reads data from pos. src is data as one string, which every
// string value is cut from, so that strings cost no allocation of their own;
// terms are handed out from slabs. pairs and elems are stacks of the members
// of the objects and arrays being read, shared by every level so that
// reading a member allocates only its value.
type parser struct {
	data  []byte
	src   string
	pos   int
	slab  []ast.Term
	pairs [][2]*ast.Term
	elems []*ast.Term
	paths []Path
	spans []Span
	cache *Cache
	// scan is how many more bytes the cache's lookups may scan (skip);
	// ends are the ends of containers their scans passed.
	scan int
	ends endMemo
	// terms counts the terms of the values read, those from the cache
	// included (as many as parsing their text builds); deepest is the
	// deepest nesting reached: what a value costs the cache that keeps it
	// (record).
	terms, deepest int
}

// stacks are a parser's pairs and elems, kept for the next parse: grown
// anew for each, they were a parse's largest allocations after its values.
type stacks struct {
	pairs [][2]*ast.Term
	elems []*ast.Term
}

// stacksPool holds the stacks between parses.
var stacksPool = sync.Pool{New: func() any { return new(stacks) }}

// maxPooledStack is the most members a stack keeps between parses: one
// that some huge value grew is let go.
const maxPooledStack = 4096

// put returns the stacks to the pool as a parse leaves them (pairs,
// elems), emptied and without the terms they pointed at, unless grown past
// maxPooledStack.
func (st *stacks) put(pairs [][2]*ast.Term, elems []*ast.Term) {
	if cap(pairs) > maxPooledStack || cap(elems) > maxPooledStack {
		return
	}
	clear(pairs[:cap(pairs)])
	clear(elems[:cap(elems)])
	st.pairs, st.elems = pairs[:0], elems[:0]
	stacksPool.Put(st)
}

// slabSize is how many terms one allocation holds.
const slabSize = 64

// term is a new term of v.
func (p *parser) term(v ast.Value) *ast.Term {
	if len(p.slab) == 0 {
		p.slab = make([]ast.Term, slabSize)
	}
	t := &p.slab[0]
	p.slab = p.slab[1:]
	p.terms++
	t.Value = v
	return t
}

// interned are the terms handed out for the strings given to Intern, and
// internedLen the longest of those strings. Written during initialization
// only, they are read without a lock.
var (
	interned    = map[string]*ast.Term{}
	internedLen int
)

// Intern makes Parse hand out one shared term for each of strs, the one OPA
// interns for it (ast.InternStringTerm), instead of a new term each time:
// the keys and common values of the documents parsed. As with
// ast.InternStringTerm, call it during initialization only. Strings OPA
// interns without Intern are parsed into terms of their own.
func Intern(strs ...string) {
	ast.InternStringTerm(strs...)
	for _, s := range strs {
		interned[s] = ast.InternedTerm(s)
		internedLen = max(internedLen, len(s))
	}
}

// stringTerm is the term of s, the interned one when there is one: one
// lookup in a small table, none for a string longer than any interned.
func (p *parser) stringTerm(s string) *ast.Term {
	if len(s) <= internedLen {
		if t, ok := interned[s]; ok {
			return t
		}
	}
	return p.term(ast.String(s))
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

var errEnd = errors.New("invalid JSON: unexpected end of input")

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value reads the value at pos. paths has a bit set for each path whose
// first level keys lead here; depth is the nesting. Unless build is set the
// value is only checked, and the term is nil.
func (p *parser) value(paths uint64, level, depth int, build bool) (*ast.Term, error) {
	p.space()
	if p.pos >= len(p.data) {
		return nil, errEnd
	}
	switch c := p.data[p.pos]; {
	case c == '{' || c == '[':
		if depth >= MaxDepth {
			return nil, p.errorf("nested deeper than %d", MaxDepth)
		}
		return p.container(paths, level, depth, build)
	case c == '"':
		s, err := p.string(build)
		if err != nil || !build {
			return nil, err
		}
		return p.stringTerm(s), nil
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number(build)
	case c == 't':
		return p.literal("true", ast.InternedTerm(true))
	case c == 'f':
		return p.literal("false", ast.InternedTerm(false))
	case c == 'n':
		return p.literal("null", ast.InternedNullTerm)
	default:
		return nil, p.errorf("unexpected %q", c)
	}
}

// container reads the object or array at pos, from the cache when it can.
func (p *parser) container(paths uint64, level, depth int, build bool) (*ast.Term, error) {
	p.deepest = max(p.deepest, depth+1)
	var miss *cacheMiss
	if p.cache != nil && paths == 0 && build {
		var t *ast.Term
		if t, miss = p.shared(depth); t != nil {
			return t, nil
		}
	}
	var (
		t   *ast.Term
		err error
	)
	if p.data[p.pos] == '{' {
		t, err = p.object(paths, level, depth+1, build)
	} else {
		t, err = p.array(p.every(paths, level), level+1, depth+1, build)
	}
	if err == nil && miss != nil {
		p.record(miss)
	}
	return t, err
}

func (p *parser) literal(text string, v *ast.Term) (*ast.Term, error) {
	if len(p.data)-p.pos < len(text) || string(p.data[p.pos:p.pos+len(text)]) != text {
		return nil, p.errorf("expected %s", text)
	}
	p.pos += len(text)
	return v, nil
}

// object reads an object at level keys down the paths it is on.
func (p *parser) object(paths uint64, level, depth int, build bool) (*ast.Term, error) {
	mark := len(p.pairs)
	defer func() { p.pairs = p.pairs[:mark] }()
	for closed := p.open('}'); !closed; {
		p.space()
		if p.pos >= len(p.data) {
			return nil, errEnd
		}
		if p.data[p.pos] != '"' {
			return nil, p.errorf("expected a string key, got %q", p.data[p.pos])
		}
		key, err := p.string(build)
		if err != nil {
			return nil, err
		}
		p.space()
		if p.pos >= len(p.data) {
			return nil, errEnd
		}
		if p.data[p.pos] != ':' {
			return nil, p.errorf("expected ':' after an object key, got %q", p.data[p.pos])
		}
		p.pos++
		below, keep, spans := p.follow(paths, level, key, build)
		if spans != 0 {
			p.space()
		}
		start := p.pos
		v, err := p.value(below, level+1, depth, keep)
		if err != nil {
			return nil, err
		}
		for m := spans; m != 0; m &= m - 1 {
			p.spans[bits.TrailingZeros64(m)] = Span{start, p.pos}
		}
		if keep {
			p.pairs = append(p.pairs, [2]*ast.Term{p.stringTerm(key), v})
		}
		if closed, err = p.next('}'); err != nil {
			return nil, err
		}
	}
	if !build {
		return nil, nil
	}
	return p.term(newObject(p.pairs[mark:])), nil
}

// follow finds the paths going on below key and what to do with its value:
// keep it (built), and the span paths that end there.
func (p *parser) follow(paths uint64, level int, key string, build bool) (below uint64, keep bool, spans uint64) {
	if !build {
		return 0, false, 0
	}
	keep = true
	for m := paths; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		keys := p.paths[i].Keys
		switch {
		case keys[level] != key || key == Every:
		case len(keys) > level+1:
			below |= 1 << i
		case p.paths[i].Drop:
			keep = false
		case i < len(p.spans):
			spans |= 1 << i
		}
	}
	return below, keep, spans
}

// open moves past an opening bracket and reports whether the container is
// empty, its closing bracket read too.
func (p *parser) open(closing byte) bool {
	p.pos++
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == closing {
		p.pos++
		return true
	}
	return false
}

// next moves past what follows a member: a comma, or the closing bracket,
// when it reports closed.
func (p *parser) next(closing byte) (closed bool, err error) {
	p.space()
	if p.pos >= len(p.data) {
		return false, errEnd
	}
	switch p.data[p.pos] {
	case ',':
		p.pos++
		return false, nil
	case closing:
		p.pos++
		return true, nil
	}
	return false, p.errorf("expected ',' or %q, got %q", closing, p.data[p.pos])
}

// newObject builds an object of pairs whose keys are strings; of duplicate
// keys the last one wins, as in encoding/json.
func newObject(pairs [][2]*ast.Term) ast.Object {
	if !duplicates(pairs) {
		return ast.NewObject(pairs...)
	}
	obj := ast.NewObjectWithCapacity(len(pairs))
	for _, kv := range pairs {
		obj.Insert(kv[0], kv[1])
	}
	return obj
}

// duplicates reports whether two pairs have the same key.
func duplicates(pairs [][2]*ast.Term) bool {
	if len(pairs) <= 16 {
		for i := 1; i < len(pairs); i++ {
			for j := range i {
				if pairs[i][0].Value.(ast.String) == pairs[j][0].Value.(ast.String) {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[ast.String]struct{}, len(pairs))
	for _, kv := range pairs {
		k := kv[0].Value.(ast.String)
		if _, dup := seen[k]; dup {
			return true
		}
		seen[k] = struct{}{}
	}
	return false
}

// every is the paths that step into each element of an array at level
// (Every) and go on below it.
func (p *parser) every(paths uint64, level int) (below uint64) {
	for m := paths; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		if keys := p.paths[i].Keys; keys[level] == Every && len(keys) > level+1 {
			below |= 1 << i
		}
	}
	return below
}

// array reads an array whose elements are level keys down the paths given.
func (p *parser) array(paths uint64, level, depth int, build bool) (*ast.Term, error) {
	mark := len(p.elems)
	defer func() { p.elems = p.elems[:mark] }()
	for closed := p.open(']'); !closed; {
		v, err := p.value(paths, level, depth, build)
		if err != nil {
			return nil, err
		}
		if build {
			p.elems = append(p.elems, v)
		}
		if closed, err = p.next(']'); err != nil {
			return nil, err
		}
	}
	if !build {
		return nil, nil
	}
	// Clipped: an append to the array copies it instead of writing past
	// its end into elements another value may share.
	return p.term(ast.NewArray(slices.Clip(slices.Clone(p.elems[mark:]))...)), nil
}

// string reads a string at pos, checking its escapes; unless build is set
// it returns "". Plain strings are sliced out; those with escapes or bytes
// that are not UTF-8 are left to encoding/json, whose unquoting the result
// must match.
func (p *parser) string(build bool) (string, error) {
	start := p.pos
	p.pos++ // "
	plain := true
	for {
		for p.pos < len(p.data) && plainByte[p.data[p.pos]] {
			p.pos++
		}
		if p.pos >= len(p.data) {
			return "", errEnd
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			switch {
			case !build:
				return "", nil
			case plain:
				return p.src[start+1 : p.pos-1], nil
			}
			var s string
			if err := json.Unmarshal(p.data[start:p.pos], &s); err != nil {
				return "", p.errorf("bad string: %v", err)
			}
			return s, nil
		case c == '\\':
			plain = false
			if err := p.escape(); err != nil {
				return "", err
			}
		case c < 0x20:
			return "", p.errorf("control character %q in a string", c)
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				plain = false
			}
			p.pos += size
		default:
			p.pos++
		}
	}
}

// plainByte marks the bytes a string's text holds as they are, which
// string passes over one table lookup each: printable ASCII but the quote
// and the backslash.
var plainByte = func() (plain [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
	}
	return plain
}()

// escape checks the escape sequence at pos and moves past it.
func (p *parser) escape() error {
	p.pos++ // \
	if p.pos >= len(p.data) {
		return errEnd
	}
	switch p.data[p.pos] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		p.pos++
		return nil
	case 'u':
		p.pos++
		for range 4 {
			if p.pos >= len(p.data) {
				return errEnd
			}
			if !isHex(p.data[p.pos]) {
				return p.errorf("bad \\u escape")
			}
			p.pos++
		}
		return nil
	}
	return p.errorf("bad escape \\%c", p.data[p.pos])
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// number reads a number as its text, checked against JSON's grammar.
func (p *parser) number(build bool) (*ast.Term, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == '0':
		p.pos++
	case p.digits() == 0:
		return nil, p.errorf("bad number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if p.digits() == 0 {
			return nil, p.errorf("bad number: no digits after '.'")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return nil, p.errorf("bad number: no digits in the exponent")
		}
	}
	if !build {
		// Checked as a built number is, so that a dropped or overwritten
		// value is refused as any other.
		if _, err := ast.NumberChecked(p.src[start:p.pos]); err != nil {
			return nil, p.errorf("%v", err)
		}
		return nil, nil
	}
	text := p.src[start:p.pos]
	if t := ast.InternedIntNumberTermFromString(text); t != nil {
		return t, nil
	}
	n, err := ast.NumberChecked(text)
	if err != nil {
		return nil, p.errorf("%v", err)
	}
	return p.term(n), nil
}

func (p *parser) digits() int {
	n := 0
	for p.pos < len(p.data) && '0' <= p.data[p.pos] && p.data[p.pos] <= '9' {
		p.pos++
		n++
	}
	return n
}
