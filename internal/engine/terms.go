package engine

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/tenantguard/tenantguard/internal/clusterview"
)

// termCache keeps the input terms that a few values decide, such as a
// request's kind, built once and shared by every request: terms of the
// input are never modified. It stops growing at maxCachedTerms.
type termCache[K comparable] struct {
	build func(K) *ast.Term
	mu    sync.RWMutex
	terms map[K]*ast.Term
}

// maxCachedTerms bounds each cache: API groups, kinds and PriorityClasses
// of a cluster number in the hundreds.
const maxCachedTerms = 4096

func newTermCache[K comparable](build func(K) *ast.Term) *termCache[K] {
	return &termCache[K]{build: build, terms: map[K]*ast.Term{}}
}

// term is the term of k, built on first use.
func (c *termCache[K]) term(k K) *ast.Term {
	c.mu.RLock()
	t, ok := c.terms[k]
	c.mu.RUnlock()
	if ok {
		return t
	}
	t = c.build(k)
	c.mu.Lock()
	if len(c.terms) < maxCachedTerms {
		c.terms[k] = t
	}
	c.mu.Unlock()
	return t
}

// kinds and resources are request.kind and request.resource by group,
// version and kind (resource).
var (
	kinds     = newTermCache(func(k [3]string) *ast.Term { return triple("kind", k) })
	resources = newTermCache(func(k [3]string) *ast.Term { return triple("resource", k) })
)

func triple(last string, k [3]string) *ast.Term {
	return ast.ObjectTerm(
		ast.Item(ast.InternedTerm("group"), ast.InternedTerm(k[0])),
		ast.Item(ast.InternedTerm("version"), ast.InternedTerm(k[1])),
		ast.Item(ast.InternedTerm(last), ast.InternedTerm(k[2])))
}

// classFacts is a tenant's default PriorityClass as the view has it.
type classFacts struct {
	name  string
	class clusterview.PriorityClass
}

// classes are cluster.priorityClasses by default class.
var classes = newTermCache(func(k classFacts) *ast.Term {
	facts := ast.NewObject(ast.Item(ast.InternedTerm("priority"), ast.InternedTerm(int(k.class.Value))))
	if k.class.PreemptionPolicy != "" {
		facts.Insert(ast.InternedTerm("preemptionPolicy"), ast.InternedTerm(k.class.PreemptionPolicy))
	}
	return ast.ObjectTerm(ast.Item(ast.InternedTerm(k.name), ast.NewTerm(facts)))
})
