package engine

import (
	"encoding/json"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
)

// sharedValue converts generic data (the form registry.Snapshot.Data and
// encoding/json give: maps, slices, strings, json.Number, bool, nil) to
// OPA values as ast.InterfaceToValue does, except that equal values are
// built once and shared: a string, number, array or object that occurs many
// times (a default applied to every tenant, a class list, a label key) is one
// term in the heap, wherever it occurs.
//
// The registry lives as OPA values for the engine's life, and the garbage
// collector visits every object of it in every cycle: the fewer objects, the
// shorter each cycle. Sharing is safe because the store's values are never
// changed, which every evaluation running at once on them already relies
// on: the plan evaluator changes only the collections an evaluation builds
// (copying a shared constant first), topdown builds new values, and OPA's
// own interned terms are shared the same way; the plan evaluator's copy is
// settled (its keys sorted) when the engine is built.
func sharedValue(data any) (ast.Value, error) {
	s := sharer{scalars: map[ast.Value]*ast.Term{}, containers: map[int][]*ast.Term{}}
	t, err := s.term(data)
	if err != nil {
		return nil, err
	}
	return t.Value, nil
}

// sharer remembers the terms built so far: strings and numbers by value
// (ast.String and ast.Number are comparable, and of different types), arrays
// and objects by hash, compared in full on a hash match.
type sharer struct {
	scalars    map[ast.Value]*ast.Term
	containers map[int][]*ast.Term
}

func (s *sharer) term(x any) (*ast.Term, error) {
	switch x := x.(type) {
	case nil:
		return ast.InternedNullTerm, nil
	case bool:
		return ast.InternedTerm(x), nil
	case string:
		return s.scalar(ast.String(x)), nil
	case json.Number:
		if _, err := x.Float64(); err != nil {
			return nil, fmt.Errorf("%q is not a number: %w", x, err)
		}
		return s.scalar(ast.Number(x)), nil
	case []any:
		elems := make([]*ast.Term, len(x))
		for i, e := range x {
			t, err := s.term(e)
			if err != nil {
				return nil, err
			}
			elems[i] = t
		}
		return s.container(ast.ArrayTerm(elems...)), nil
	case map[string]any:
		pairs := make([][2]*ast.Term, 0, len(x))
		for k, e := range x {
			v, err := s.term(e)
			if err != nil {
				return nil, err
			}
			pairs = append(pairs, [2]*ast.Term{s.scalar(ast.String(k)), v})
		}
		return s.container(ast.ObjectTerm(pairs...)), nil
	default:
		return nil, fmt.Errorf("%T is not a JSON value", x)
	}
}

// scalar is the one term of a string or number.
func (s *sharer) scalar(v ast.Value) *ast.Term {
	if t, ok := s.scalars[v]; ok {
		return t
	}
	t := ast.NewTerm(v)
	s.scalars[v] = t
	return t
}

// container is t, or an equal array or object built before.
func (s *sharer) container(t *ast.Term) *ast.Term {
	h := t.Hash()
	for _, seen := range s.containers[h] {
		if seen.Equal(t) {
			return seen
		}
	}
	s.containers[h] = append(s.containers[h], t)
	return t
}
