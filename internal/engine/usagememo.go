package engine

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/tenantguard/tenantguard/internal/usage"
)

// usageMemo remembers the usage of the pods' resources it has computed,
// by what a pod's usage depends on (its containers, init containers,
// overhead, pod-level resources and status): the pods of one workload are
// alike, and computing a usage (Kubernetes' helpers, quantities) costs
// several times what finding it again does. It holds at most memoSize
// shapes and starts over when full.
type usageMemo struct {
	mu     sync.Mutex
	shapes map[int][]memoEntry
	size   int
}

type memoEntry struct {
	shape *ast.Term
	usage usage.List
}

const memoSize = 1024

// shapeKeys are the parts of a pod its usage depends on.
var shapeKeys = [...]*ast.Term{ast.InternedTerm("containers"), ast.InternedTerm("initContainers"), ast.InternedTerm("overhead"), ast.InternedTerm("resources")}

// podShape is the part of a pod its usage depends on, as one value.
func podShape(obj ast.Object) *ast.Term {
	spec := objectAt(obj, "spec")
	terms := make([]*ast.Term, 0, len(shapeKeys)+1)
	for _, k := range shapeKeys {
		var t *ast.Term
		if spec != nil {
			t = spec.Get(k)
		}
		if t == nil {
			t = ast.InternedNullTerm
		}
		terms = append(terms, t)
	}
	if status := termAt(obj, "status"); status != nil {
		terms = append(terms, status)
	}
	return ast.ArrayTerm(terms...)
}

// get returns the usage remembered for shape.
func (m *usageMemo) get(shape *ast.Term) (usage.List, bool) {
	h := shape.Hash()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.shapes[h] {
		if e.shape.Equal(shape) {
			return e.usage, true
		}
	}
	return nil, false
}

// put remembers the usage of shape.
func (m *usageMemo) put(shape *ast.Term, l usage.List) {
	h := shape.Hash()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shapes == nil || m.size >= memoSize {
		m.shapes, m.size = map[int][]memoEntry{}, 0
	}
	m.shapes[h] = append(m.shapes[h], memoEntry{shape, l})
	m.size++
}
