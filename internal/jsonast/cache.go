package jsonast

import (
	"hash/maphash"
	"sync/atomic"
	"unsafe"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Cache shares the values of small objects and arrays that parses meet
// again and again, such as a request's kind and resource, a label set, a
// container's ports and resources, or a whole pod template when it is
// small: the text is looked up before it is built, and on a hit the value
// built the first time is handed out again. It is safe for concurrent use, and its
// values, which every parse that hits them shares, must only be read (they
// are settled: Settle).
//
// A value is cached when its text misses twice in a row in its slot, and
// only if its text is at most MaxCachedText bytes and it is built of at most
// MaxCachedTerms terms. Each slot keeps one value; a value that keeps being
// hit holds its slot against other texts, for as many misses as it had hits
// (at most maxHits, roughly: the counts are not exact under contention), so
// that the values read most stay cached while one-off texts come and go.
// Its memory is bounded by its slots: each keeps a copy of the text, at most
// MaxCachedTerms terms, and the objects and arrays they hold. Caching a
// container's resources allocates 1.1 KB, a small container 2.3 KB, and 18
// objects of an interned key in 505 bytes 7.6 KB; an OPA object costs about
// 400 bytes, so the most objects 512 bytes of text can hold keep about
// 12 KB. Cached values outlive the parses that read them, until evicted.
type Cache struct {
	seed  maphash.Seed
	mask  uint64
	slots []cacheSlot
}

// MaxCachedText is the longest text, in bytes, of a value a Cache keeps.
const MaxCachedText = 512

// MaxCachedTerms is the most terms a value a Cache keeps is built of: an
// object, array, string or number each takes one (a string the parser
// interns, true, false and null none).
const MaxCachedTerms = 32

// scanBudget is how many bytes a parse of n bytes may scan ahead in all to
// look values up in the cache (skip): each lookup scans up to
// MaxCachedText bytes, and a text nesting many containers would otherwise
// have its bytes scanned once per container around them. Past the budget,
// the parse goes on without the cache.
func scanBudget(n int) int { return 2*n + MaxCachedText }

// maxHits is the most hits a cached value counts, and so the most misses of
// other texts it holds its slot against.
const maxHits = 16

// cacheSlot is one slot: the value cached, and the hash of the last text
// that missed in it, so that a text missing twice gets cached.
type cacheSlot struct {
	entry  atomic.Pointer[cached]
	missed atomic.Uint64
}

// cached is a value and its text, how deep the text nests and how many
// terms the value is built of; only hits changes once it is shared.
type cached struct {
	hash         uint64
	text         string
	term         *ast.Term
	depth, terms int
	hits         atomic.Int32
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

// ParsePaths is the package's ParsePaths with the cache: a value that no
// path goes below or drops may come from it. Unlike the package's, it does
// not copy data: the strings of the values not from the cache share it, so
// data must not be modified afterwards (the cache's values keep copies of
// their own). With a nil cache nothing comes from a cache, and the strings
// share data all the same.
func (c *Cache) ParsePaths(data []byte, paths []Path, spans []Span) (ast.Value, error) {
	return parse(data, unsafe.String(unsafe.SliceData(data), len(data)), paths, spans, c) //nolint:gosec // read-only: the caller keeps data unchanged
}

// shared looks up the object or array at pos, nested depth deep. On a hit it
// moves past it and returns its value. Otherwise miss is where to record the
// value once built (record), nil when it is not to be cached.
func (p *parser) shared(depth int) (t *ast.Term, miss *cacheMiss) {
	if p.scan <= 0 {
		return nil, nil
	}
	limit := min(MaxCachedText, p.scan, len(p.data)-p.pos)
	end := p.ends.end(p.pos)
	if end < 0 || end-p.pos > limit { // not noted, or past this lookup's limit
		end = skip(p.data, p.pos, limit, &p.ends)
	}
	if end < 0 {
		p.scan -= limit
		return nil, nil
	}
	p.scan -= end - p.pos
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
		p.terms += e.terms
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
	return nil, &cacheMiss{slot: slot, hash: h, start: p.pos, terms: p.terms}
}

// cacheMiss is a text that missed twice, to be cached once it is read;
// terms is the parser's count (parser.terms) when it started.
type cacheMiss struct {
	slot         *cacheSlot
	hash         uint64
	start, terms int
}

// record caches the value read since the miss, parsed again from a copy of
// its text, so that its strings do not keep the whole input alive.
func (p *parser) record(m *cacheMiss) {
	terms := p.terms - m.terms
	if terms > MaxCachedTerms {
		return
	}
	text := string(p.data[m.start:p.pos])
	q := parser{data: []byte(text), src: text, slab: make([]ast.Term, terms)}
	t, err := q.value(0, 0, 0, true)
	if err != nil || q.pos != len(text) {
		return // cannot be: the same text has just been read
	}
	Settle(t.Value)
	// The text's nesting, not the value's: of a key given twice, the
	// value left out nests too.
	e := &cached{hash: m.hash, text: text, term: t, depth: q.deepest, terms: terms}
	m.slot.entry.Store(e)
}

// skip finds the end of the object or array at data[pos]: the position after
// its closing bracket, or -1 when it is longer than limit bytes or does not
// end. It only follows the brackets and strings; the text it delimits is
// checked by parsing it before it is ever cached. It notes in m, when not
// nil, the ends of the containers nested in it that it passes (maxNoted
// levels deep).
func skip(data []byte, pos, limit int, m *endMemo) int {
	end := min(len(data), pos+limit)
	depth := 0
	var open [maxNoted]int
	for i := pos; i < end; i++ {
		switch data[i] {
		case '{', '[':
			if depth < maxNoted {
				open[depth] = i //nolint:gosec // depth < maxNoted
			}
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if m != nil && depth < maxNoted {
				m.note(open[depth], i+1) //nolint:gosec // 0 < depth < maxNoted
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

// endSlots is how many ends of containers a parse remembers (endMemo); a
// power of two.
const endSlots = 64

// maxNoted is how many levels deep inside the container it looks up a scan
// notes the ends of the containers it passes.
const maxNoted = 16

// endMemo remembers where the containers a lookup's scan passed end, by
// where they start, so that the lookups of the containers inside them find
// their ends without scanning them again: without it, a text nesting
// containers is scanned once for each container around each byte. A slot
// keeps the last container noted whose start maps to it.
type endMemo struct {
	starts, ends [endSlots]int32 // start+1 (0: an empty slot), end
}

// note remembers that the container at start ends at end.
func (m *endMemo) note(start, end int) {
	i := start & (endSlots - 1)
	m.starts[i], m.ends[i] = int32(start+1), int32(end) //nolint:gosec // a review is at most a few MiB
}

// end is where the container at start ends, -1 when not noted.
func (m *endMemo) end(start int) int {
	i := start & (endSlots - 1)
	if m.starts[i] != int32(start+1) { //nolint:gosec // as in note
		return -1
	}
	return int(m.ends[i])
}
