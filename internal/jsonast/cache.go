package jsonast

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Cache shares the values of small objects and arrays that parses meet
// again and again, such as the pod template of every pod a ReplicaSet
// creates, a request's kind and resource, or a container's resources: the
// text is looked up before it is built, and on a hit the value built the
// first time is handed out again. It is safe for concurrent use, and its
// values, which every parse that hits them shares, must only be read (they
// are settled: Settle).
//
// A value is cached the second time its text misses, and only if its text is
// at most MaxCachedText bytes. Each slot keeps one value; a value that keeps
// being hit holds its slot against newcomers, for as many misses as it had
// hits (at most maxHits), so that the values read most stay cached while
// one-off texts come and go. Its size is bounded: slots times a value of
// MaxCachedText bytes of text.
type Cache struct {
	seed  maphash.Seed
	mask  uint64
	slots []cacheSlot
}

// MaxCachedText is the longest text, in bytes, of a value a Cache keeps.
const MaxCachedText = 512

// maxHits is the most hits a cached value counts, and so the most misses of
// other texts it holds its slot against.
const maxHits = 16

// cacheSlot is one slot: the value cached, and the hash of the last text
// that missed in it, so that a text missing twice gets cached.
type cacheSlot struct {
	entry  atomic.Pointer[cached]
	missed atomic.Uint64
}

// cached is a value and its text; only hits changes once it is shared.
type cached struct {
	hash  uint64
	text  string
	term  *ast.Term
	depth int
	hits  atomic.Int32
}

// NewCache is a cache of slots values; slots is rounded up to a power of
// two, at least 1.
func NewCache(slots int) *Cache {
	n := uint64(1)
	for n < uint64(max(slots, 1)) {
		n <<= 1
	}
	return &Cache{seed: maphash.MakeSeed(), mask: n - 1, slots: make([]cacheSlot, n)}
}

// ParsePaths is the package's ParsePaths with the cache: a value outside
// every path, built, and at most MaxCachedText bytes long may come from it.
// A nil cache parses as ParsePaths does.
func (c *Cache) ParsePaths(data []byte, paths []Path, spans []Span) (ast.Value, error) {
	return parse(data, paths, spans, c)
}

// shared looks up the object or array at pos, nested depth deep. On a hit it
// moves past it and returns its value. Otherwise miss is where to record the
// value once built (record), nil when it is not to be cached.
func (p *parser) shared(depth int) (t *ast.Term, miss *cacheMiss) {
	end := skip(p.data, p.pos, MaxCachedText)
	if end < 0 {
		return nil, nil
	}
	text := p.data[p.pos:end]
	c := p.cache
	h := maphash.Bytes(c.seed, text)
	slot := &c.slots[h&c.mask]
	e := slot.entry.Load()
	if e != nil && e.hash == h && e.text == string(text) {
		if depth+e.depth > MaxDepth {
			return nil, nil
		}
		if e.hits.Load() < maxHits {
			e.hits.Add(1)
		}
		p.pos = end
		return e.term, nil
	}
	if e != nil && e.hits.Load() > 0 {
		// The value cached holds its slot, one hit fewer.
		e.hits.Add(-1)
		return nil, nil
	}
	if slot.missed.Swap(h) != h {
		return nil, nil
	}
	return nil, &cacheMiss{slot: slot, hash: h, start: p.pos}
}

// cacheMiss is a text that missed twice, to be cached once it is read.
type cacheMiss struct {
	slot  *cacheSlot
	hash  uint64
	start int
}

// record caches the value read since the miss, parsed again from a copy of
// its text, so that its strings do not keep the whole input alive.
func (p *parser) record(m *cacheMiss) {
	text := string(p.data[m.start:p.pos])
	q := parser{data: []byte(text), src: text}
	t, err := q.value(0, 0, 0, true)
	if err != nil || q.pos != len(text) {
		return // cannot be: the same text has just been read
	}
	Settle(t.Value)
	e := &cached{hash: m.hash, text: text, term: t, depth: depthOf(t.Value)}
	m.slot.entry.Store(e)
}

// depthOf is how deep v's objects and arrays nest, 0 for a scalar.
func depthOf(v ast.Value) int {
	deepest := 0
	switch v := v.(type) {
	case ast.Object:
		v.Foreach(func(_, e *ast.Term) { deepest = max(deepest, depthOf(e.Value)) })
	case *ast.Array:
		for i := range v.Len() {
			deepest = max(deepest, depthOf(v.Elem(i).Value))
		}
	default:
		return 0
	}
	return deepest + 1
}

// skip finds the end of the object or array at data[pos]: the position after
// its closing bracket, or -1 when it is longer than limit bytes or does not
// end. It only follows the brackets and strings; the text it delimits is
// checked by parsing it before it is ever cached.
func skip(data []byte, pos, limit int) int {
	end := min(len(data), pos+limit)
	depth := 0
	for i := pos; i < end; i++ {
		switch data[i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		case '"':
			for i++; i < end && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		}
	}
	return -1
}
