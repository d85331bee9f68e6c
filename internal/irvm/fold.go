package irvm

import (
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/ir"

	"github.com/tenantguard/tenantguard/internal/jsonast"
)

// The planner builds a composite literal ({"Pod", "Deployment"}, ["spec"],
// {"k": "v"}, []) on every evaluation: a MakeSetStmt, MakeArrayStmt or
// MakeObjectStmt followed by one statement adding each element. When every
// element is a constant, New folds the run into one constant statement
// whose value is built once and shared by every evaluation.
//
// A shared value must never be modified, yet a plan may go on adding to a
// collection it made (a set of violations starts empty). So a constant
// statement whose local is mutable (mutable.go) gives it a term of its own,
// marked frozen, around the shared value; the statements that modify
// collections replace a frozen term's value by a copy first (thaw). The
// term is per evaluation, as a made collection's is, so whatever holds it
// sees the change as before. The local of any other constant gets the
// constant's one term, marked shared, which nothing modifies.

// frozen marks the terms whose value is shared: their Location.
var frozen = &ast.Location{File: "irvm: a constant shared by every evaluation"}

// shared marks the terms themselves shared by every evaluation.
var shared = &ast.Location{File: "irvm: a constant term shared by every evaluation"}

// constant is a folded literal: Target is set to Term when it is set, a
// frozen term of Value otherwise.
type constant struct {
	ir.Location
	Target ir.Local
	Value  ast.Value
	Term   *ast.Term
}

// The constants of empty literals, which need no folding.
var (
	emptyArray  = ast.NewArray()
	emptyObject = jsonast.Settle(ast.NewObject()).(ast.Object)
	emptySet    = jsonast.Settle(ast.NewSet()).(ast.Set)
)

// thaw gives a frozen term a copy of its value, to be modified.
func thaw(t *ast.Term) {
	if t.Location == shared {
		// Modifying it would change it for every evaluation running.
		panic("irvm: a statement modifies a constant that mutability found read-only")
	}
	if t.Location != frozen {
		return
	}
	switch v := t.Value.(type) {
	case ast.Set:
		t.Value = v.Copy()
	case ast.Object:
		t.Value = v.Copy()
	}
	// An array needs no copy: appendTo puts its elements into an array of
	// the evaluation's own (and its constant has no spare capacity, so
	// Append, when appendTo falls back on it, copies it).
	t.Location = nil
}

// fold folds the constant literals of blocks and of the blocks inside them.
func (p *Program) fold(blocks []*ir.Block) {
	for _, blk := range blocks {
		out := blk.Stmts[:0]
		for i := 0; i < len(blk.Stmts); i++ {
			p.fold(nested(blk.Stmts[i]))
			if c, n := p.literal(blk.Stmts[i:]); c != nil {
				out = append(out, c)
				i += n - 1
				continue
			}
			out = append(out, blk.Stmts[i])
		}
		clear(blk.Stmts[len(out):])
		blk.Stmts = out
	}
}

// nested are the blocks inside a statement, if it has any.
func nested(s ir.Stmt) []*ir.Block {
	switch s := s.(type) {
	case *ir.BlockStmt:
		return s.Blocks
	case *ir.ScanStmt:
		return []*ir.Block{s.Block}
	case *ir.NotStmt:
		return []*ir.Block{s.Block}
	case *ir.WithStmt:
		return []*ir.Block{s.Block}
	}
	return nil
}

// share gives the folded literals of blocks whose local is not mutable
// their one shared term.
func share(blocks []*ir.Block, mutable map[ir.Local]bool) {
	for _, blk := range blocks {
		for _, s := range blk.Stmts {
			if c, ok := s.(*constant); ok && !mutable[c.Target] && c.Term == nil {
				c.Term = &ast.Term{Value: c.Value, Location: shared}
			}
			share(nested(s), mutable)
		}
	}
}

// literal folds the literal that stmts start with, if they start with one:
// the constant and how many statements it replaces.
func (p *Program) literal(stmts []ir.Stmt) (*constant, int) {
	var (
		target ir.Local
		loc    ir.Location
		value  ast.Value
	)
	switch s := stmts[0].(type) {
	case *ir.MakeArrayStmt:
		target, loc, value = s.Target, s.Location, ast.NewArray()
	case *ir.MakeSetStmt:
		target, loc, value = s.Target, s.Location, ast.NewSet()
	case *ir.MakeObjectStmt:
		target, loc, value = s.Target, s.Location, ast.NewObject()
	default:
		return nil, 0
	}
	n := 1
	for ; n < len(stmts); n++ {
		v, ok := p.add(value, target, stmts[n])
		if !ok {
			break
		}
		value = v
	}
	switch v := value.(type) {
	case *ast.Array:
		elems := make([]*ast.Term, v.Len())
		for i := range elems {
			elems[i] = v.Elem(i)
		}
		value = ast.NewArray(elems...) // no spare capacity
	case ast.Object, ast.Set:
		jsonast.Settle(v)
	}
	return &constant{Location: loc, Target: target, Value: value}, n
}

// add is collection with the constant element s adds to target; false
// when s is not such a statement.
func (p *Program) add(collection ast.Value, target ir.Local, s ir.Stmt) (ast.Value, bool) {
	switch s := s.(type) {
	case *ir.ArrayAppendStmt:
		arr, ok := collection.(*ast.Array)
		if v := p.constantOperand(s.Value); ok && s.Array == target && v != nil {
			return arr.Append(v), true
		}
	case *ir.SetAddStmt:
		set, ok := collection.(ast.Set)
		if v := p.constantOperand(s.Value); ok && s.Set == target && v != nil {
			set.Add(v)
			return set, true
		}
	case *ir.ObjectInsertStmt:
		obj, ok := collection.(ast.Object)
		k, v := p.constantOperand(s.Key), p.constantOperand(s.Value)
		if ok && s.Object == target && k != nil && v != nil {
			obj.Insert(k, v)
			return obj, true
		}
	}
	return nil, false
}

// constantOperand is a string or boolean operand's value, nil for a local.
func (p *Program) constantOperand(op ir.Operand) *ast.Term {
	switch v := op.Value.(type) {
	case ir.StringIndex:
		if int(v) >= 0 && int(v) < len(p.strings) {
			return p.strings[v]
		}
	case ir.Bool:
		return ast.InternedTerm(bool(v))
	}
	return nil
}

// foldedIn are the folded literals of blocks and of the blocks nested in
// them.
func foldedIn(blocks []*ir.Block) (out []*constant) {
	for _, b := range blocks {
		for _, s := range b.Stmts {
			if c, ok := s.(*constant); ok {
				out = append(out, c)
			}
			out = append(out, foldedIn(nested(s))...)
		}
	}
	return out
}
