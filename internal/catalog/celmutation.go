package catalog

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// The patch types of a CEL mutation, as a MutatingAdmissionPolicy names them.
const (
	// PatchJSONPatch: the expression is a list of JSONPatch{op, path, value}.
	PatchJSONPatch = "JSONPatch"
	// PatchApplyConfiguration: the expression is an Object{...} merged into
	// the object as server-side apply would.
	PatchApplyConfiguration = "ApplyConfiguration"
)

// CELMutation is one mutation of a rule's CEL translation, an entry of a
// *.cel file's mutations: what a MutatingAdmissionPolicy applies to set the
// rule's defaults, as the family's Rego mutations do for tenantguard's
// mutating webhook.
type CELMutation struct {
	// PatchType is PatchJSONPatch or PatchApplyConfiguration.
	PatchType string
	// Expression is the CEL of the patch; it returns an empty patch (an
	// empty list, Object{}) when there is nothing to set.
	Expression string
	// Operations are the operations it acts on: CREATE unless the entry
	// names others.
	Operations []string
}

type celMutation struct {
	ID         string   `yaml:"id"`
	PatchType  string   `yaml:"patchType"`
	Expression string   `yaml:"expression"`
	Operations []string `yaml:"operations"`
}

// mutation reads one entry of a *.cel file's mutations and adds it to its
// rule's translation, after those read before it.
func (c *Catalog) mutation(path string, node *yaml.Node, problems *problems) {
	var m celMutation
	if !decode(path, node, &m, problems) {
		return
	}
	i := c.ruleIndex(path, node.Line, m.ID, "mutates for", problems)
	switch {
	case i < 0:
		return
	case !c.rules[i].Mutates:
		problems.at(path, node.Line, "mutates for rule %q, whose METADATA does not say mutates: true", m.ID)
		return
	case m.PatchType != PatchJSONPatch && m.PatchType != PatchApplyConfiguration:
		problems.at(path, node.Line, "a mutation of rule %q: patchType %q is not %s or %s", m.ID, m.PatchType, PatchJSONPatch, PatchApplyConfiguration)
		return
	case m.Expression == "":
		problems.at(path, node.Line, "a mutation of rule %q needs an expression", m.ID)
		return
	}
	r := &c.rules[i]
	if len(m.Operations) == 0 {
		m.Operations = []string{"CREATE"}
	}
	for _, op := range m.Operations {
		if (op != "CREATE" && op != "UPDATE") || !slices.Contains(r.Operations, op) {
			problems.at(path, node.Line, "a mutation of rule %q: operation %q is not one of the rule's operations that mutate (%s, less DELETE)", m.ID, op, strings.Join(r.Operations, ", "))
		}
	}
	checkSyntax(path, node.Line, "a mutation of rule "+m.ID, m.Expression, problems)
	tr := r.celRule()
	tr.Mutations = append(tr.Mutations, CELMutation{PatchType: m.PatchType, Expression: m.Expression, Operations: m.Operations})
}

// celRule is the rule's translation, made when it has none yet.
func (r *Rule) celRule() *CELRule {
	if r.CEL == nil {
		r.CEL = &CELRule{}
	}
	return r.CEL
}

// HasCELValidation reports whether the rule's CEL validates it: what the
// ValidatingAdmissionPolicy and Kyverno exports run.
func (r *Rule) HasCELValidation() bool { return r.CEL != nil && r.CEL.Validation != "" }

// HasCELMutations reports whether CEL sets the rule's defaults: what the
// MutatingAdmissionPolicy export runs.
func (r *Rule) HasCELMutations() bool { return r.CEL != nil && len(r.CEL.Mutations) > 0 }

// MutationOperations are the operations of every mutation, in the API
// server's order: what the rule's MutatingAdmissionPolicy matches.
func (t *CELRule) MutationOperations() []string {
	var ops []string
	for _, m := range t.Mutations {
		ops = union(ops, m.Operations)
	}
	return inOrder(ops)
}
