package clusterview

import (
	"iter"
	"slices"
	"strings"
)

// Labels are a namespace's labels as the view keeps them: key and value
// pairs sorted by key in one slice. A cluster has 10,000s of namespaces
// with a few labels each; a map apiece would cost several times the
// memory, and as many more objects for the garbage collector to walk.
// The zero value has no labels.
type Labels struct {
	pairs []string // key, value, key, value, ...
}

// NewLabels copies a label map.
func NewLabels(m map[string]string) Labels {
	if len(m) == 0 {
		return Labels{}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	pairs := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		pairs = append(pairs, k, m[k])
	}
	return Labels{pairs: pairs}
}

// Len is the number of labels.
func (l Labels) Len() int { return len(l.pairs) / 2 }

// Get returns a label's value, "" when the label is not set.
func (l Labels) Get(key string) string {
	v, _ := l.Lookup(key)
	return v
}

// Lookup returns a label's value and whether it is set.
func (l Labels) Lookup(key string) (string, bool) {
	lo, hi := 0, l.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := strings.Compare(l.pairs[2*mid], key); {
		case c == 0:
			return l.pairs[2*mid+1], true
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return "", false
}

// Has reports whether a label is set: with Get, Labels is a
// k8s.io/apimachinery labels.Labels, which selectors match.
func (l Labels) Has(key string) bool {
	_, ok := l.Lookup(key)
	return ok
}

// All yields the labels in key order.
func (l Labels) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for i := 0; i+1 < len(l.pairs); i += 2 {
			if !yield(l.pairs[i], l.pairs[i+1]) {
				return
			}
		}
	}
}
