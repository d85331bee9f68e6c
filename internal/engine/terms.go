package engine

import (
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/jsonast"
)

// termCache keeps the input terms that a few values decide, such as a
// tenant's default PriorityClass, built once and shared by every request:
// terms of the input are never modified. It stops growing at
// maxCachedTerms.
type termCache[K comparable] struct {
	build func(K) *ast.Term
	// clone copies a key's strings: a request's share its whole body,
	// which a cached term must not keep alive.
	clone func(K) K
	mu    sync.RWMutex
	terms map[K]*ast.Term
}

// maxCachedTerms bounds each cache: API groups, kinds and PriorityClasses
// of a cluster number in the hundreds.
const maxCachedTerms = 4096

func newTermCache[K comparable](clone func(K) K, build func(K) *ast.Term) *termCache[K] {
	return &termCache[K]{clone: clone, build: build, terms: map[K]*ast.Term{}}
}

// term is the term of k, built on first use.
func (c *termCache[K]) term(k K) *ast.Term {
	c.mu.RLock()
	t, ok := c.terms[k]
	c.mu.RUnlock()
	if ok {
		return t
	}
	k = c.clone(k)
	t = settled(c.build(k))
	c.mu.Lock()
	if len(c.terms) < maxCachedTerms {
		c.terms[k] = t
	}
	c.mu.Unlock()
	return t
}

// settled is a shared term, its keys sorted (jsonast.Settle).
func settled(t *ast.Term) *ast.Term {
	jsonast.Settle(t.Value)
	return t
}

// classFacts is a tenant's default PriorityClass as the view has it.
type classFacts struct {
	name  string
	class clusterview.PriorityClass
}

// classes are cluster.priorityClasses by default class.
var classes = newTermCache(func(k classFacts) classFacts {
	k.name, k.class.PreemptionPolicy = strings.Clone(k.name), strings.Clone(k.class.PreemptionPolicy)
	return k
}, func(k classFacts) *ast.Term {
	facts := ast.NewObject(ast.Item(ast.InternedTerm("priority"), ast.InternedTerm(int(k.class.Value))))
	if k.class.PreemptionPolicy != "" {
		facts.Insert(ast.InternedTerm("preemptionPolicy"), ast.InternedTerm(k.class.PreemptionPolicy))
	}
	return ast.ObjectTerm(ast.Item(ast.InternedTerm(k.name), ast.NewTerm(facts)))
})
