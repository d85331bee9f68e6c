package engine

import (
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// ruleDocuments are the documents under data that a compiled library
// defines rules for: what ast.CheckPathConflicts walks in the compiler's
// rule tree, kept so that the compiler itself need not be.
type ruleDocuments []ruleDocument

// ruleDocument is one path under data with rules, and the first rule's
// place in the library.
type ruleDocument struct {
	path     []string
	location *ast.Location
}

// ruleDocumentsOf collects the rule documents of a compiled library, as
// ast.CheckPathConflicts finds them: paths of string keys only, since other
// keys cannot meet data.
func ruleDocumentsOf(c *ast.Compiler) ruleDocuments {
	var docs ruleDocuments
	var walk func(n *ast.TreeNode, path []string)
	walk = func(n *ast.TreeNode, path []string) {
		key, ok := n.Key.(ast.String)
		if !ok {
			return
		}
		path = append(path[:len(path):len(path)], string(key))
		if len(n.Values) > 0 {
			var loc *ast.Location
			if r := n.Values[0]; r.Location != nil {
				copied := *r.Location
				copied.Text = nil // the rule's source is not needed to name its place
				loc = &copied
			}
			docs = append(docs, ruleDocument{path: path, location: loc})
		}
		for _, child := range n.Children {
			walk(child, path)
		}
	}
	if root := c.RuleTree.Child(ast.DefaultRootDocument.Value); root != nil {
		for _, child := range root.Children {
			walk(child, nil)
		}
	}
	return docs
}

// conflicts refuses data at any rule document's path (exists says whether
// the store holds some), with the errors ast.CheckPathConflicts gives: it
// too looks no deeper than a document it refuses. The documents are in the
// order of that walk, each after the documents above it.
func (docs ruleDocuments) conflicts(exists func([]string) (bool, error)) error {
	var errs ast.Errors
	var refused []string
	for _, d := range docs {
		if refused != nil && len(d.path) > len(refused) && slices.Equal(d.path[:len(refused)], refused) {
			continue
		}
		s := strings.Join(d.path, "/")
		ok, err := exists(d.path)
		switch {
		case err != nil:
			errs = append(errs, ast.NewError(ast.CompileErr, d.location, "conflict check for data path %v: %v", s, err.Error()))
		case ok:
			errs = append(errs, ast.NewError(ast.CompileErr, d.location, "conflicting rule for data path %v found", s))
		default:
			continue
		}
		refused = d.path
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
