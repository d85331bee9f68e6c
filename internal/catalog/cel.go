package catalog

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"gopkg.in/yaml.v3"
)

// CELSuffix ends the name of a CEL translation file, a YAML document (not
// named .yaml, which OPA would load as data): beside a family's Rego,
// the CEL that ValidatingAdmissionPolicy and Kyverno's ValidatingPolicy run
// for its rules; beside a library package, the variables its rules share.
const CELSuffix = ".cel"

// The variables every exported policy has before the library's: the
// compiled registry and tenantguard's own user names, from a parameter
// object (VAP) or as literals (Kyverno).
const (
	VariableRegistry = "registry"
	VariableManagers = "managers"
)

// ProvidedVariables are VariableRegistry and VariableManagers.
var ProvidedVariables = []string{VariableRegistry, VariableManagers}

// Variable is a named CEL expression, read as variables.NAME.
type Variable struct {
	Name, Expression string
	uses             []string
	file             string
	line             int
}

// CELRule is a rule's CEL translation: its validation (the
// ValidatingAdmissionPolicy's and Kyverno's), its mutations (the
// MutatingAdmissionPolicy's), or both.
type CELRule struct {
	// Validation must hold for the request to be admitted; Message is the
	// CEL expression of the denial, "[rule-id] sentence". Both are empty
	// when the rule's CEL only mutates.
	Validation, Message string
	// Variables are the library's variables the validation and message
	// read, directly or through others, each after those it reads
	// (ProvidedVariables come first and are not listed).
	Variables []Variable
	// Mutations set the rule's defaults, applied in order; nil when CEL
	// does not set them.
	Mutations []CELMutation
	// MutationVariables are the variables the mutations read, as Variables.
	MutationVariables []Variable
}

// celFile is a *.cel file.
type celFile struct {
	Variables []yaml.Node `yaml:"variables"`
	Rules     []yaml.Node `yaml:"rules"`
	Mutations []yaml.Node `yaml:"mutations"`
}

type celVariable struct {
	Name       string `yaml:"name"`
	Expression string `yaml:"expression"`
	// AtKindPath generates the expression: the object's field at the path
	// the kind set gives the request's kind, {} for other kinds; or, with
	// pointer and no object, that path as a JSON pointer, "" for other kinds.
	AtKindPath *kindPath `yaml:"atKindPath"`
}

// kindPath is an atKindPath of a *.cel variable.
type kindPath struct {
	KindSet string `yaml:"kindSet"`
	Object  string `yaml:"object"`
	Pointer bool   `yaml:"pointer"`
}

type celRule struct {
	ID         string `yaml:"id"`
	Validation string `yaml:"validation"`
	Message    string `yaml:"message"`
}

var (
	identifier = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	reference  = regexp.MustCompile(`\bvariables\.([a-zA-Z_][a-zA-Z0-9_]*)`)
	// celParser checks expressions' syntax; the exports' tests compile
	// them in the Kubernetes CEL environment.
	celParser, _ = cel.NewEnv(cel.OptionalTypes())
)

// translate reads the CEL files and attaches each rule's translation.
func (c *Catalog) translate(problems *problems) {
	variables := map[string]*Variable{}
	translated := map[string]string{} // rule id -> file:line
	for _, path := range sortedKeys(c.cel) {
		var file celFile
		dec := yaml.NewDecoder(strings.NewReader(c.cel[path]))
		dec.KnownFields(true)
		if err := dec.Decode(&file); err != nil {
			problems.at(path, 0, "%v", err)
			continue
		}
		for _, node := range file.Variables {
			if v, ok := c.celVariable(path, &node, problems); ok {
				if _, dup := variables[v.Name]; dup || slices.Contains(ProvidedVariables, v.Name) {
					problems.at(path, node.Line, "variable %q is defined twice (or is one of %s, which every policy has)", v.Name, strings.Join(ProvidedVariables, ", "))
					continue
				}
				variables[v.Name] = v
				c.variables = append(c.variables, *v)
			}
		}
		for _, node := range file.Rules {
			var r celRule
			if !decode(path, &node, &r, problems) {
				continue
			}
			i := c.ruleIndex(path, node.Line, r.ID, "translates", problems)
			switch {
			case i < 0:
				continue
			case translated[r.ID] != "":
				problems.at(path, node.Line, "translates rule %q again; it is translated at %s", r.ID, translated[r.ID])
				continue
			case r.Validation == "" || r.Message == "":
				problems.at(path, node.Line, "rule %q needs a validation and a message", r.ID)
				continue
			}
			translated[r.ID] = fmt.Sprintf("%s:%d", path, node.Line)
			for _, expr := range []string{r.Validation, r.Message} {
				checkSyntax(path, node.Line, "rule "+r.ID, expr, problems)
			}
			tr := c.rules[i].celRule()
			tr.Validation, tr.Message = r.Validation, r.Message
		}
		for _, node := range file.Mutations {
			c.mutation(path, &node, problems)
		}
	}
	for i := range c.variables {
		v := &c.variables[i]
		for _, name := range v.uses {
			if _, ok := variables[name]; !ok && !slices.Contains(ProvidedVariables, name) {
				problems.at(v.file, v.line, "variable %q reads variables.%s, which no *%s file defines", v.Name, name, CELSuffix)
			}
		}
	}
	for i := range c.rules {
		c.linkCEL(&c.rules[i], variables, problems)
	}
}

// celVariable reads one variable, generating an atKindPath expression.
func (c *Catalog) celVariable(path string, node *yaml.Node, problems *problems) (*Variable, bool) {
	var v celVariable
	if !decode(path, node, &v, problems) {
		return nil, false
	}
	if !identifier.MatchString(v.Name) {
		problems.at(path, node.Line, "variable name %q is not a CEL identifier", v.Name)
		return nil, false
	}
	expr := v.Expression
	switch {
	case (expr == "") == (v.AtKindPath == nil):
		problems.at(path, node.Line, "variable %q needs an expression or an atKindPath, not both", v.Name)
		return nil, false
	case v.AtKindPath != nil:
		var err error
		if expr, err = c.atKindPath(*v.AtKindPath); err != nil {
			problems.at(path, node.Line, "variable %q: %v", v.Name, err)
			return nil, false
		}
	}
	checkSyntax(path, node.Line, "variable "+v.Name, expr, problems)
	return &Variable{Name: v.Name, Expression: expr, uses: references(expr), file: path, line: node.Line}, true
}

// atKindPath is the CEL of an object's field at the path a kind set gives
// the request's kind (the pod spec of any pod carrier, say), or with
// Pointer of that path as a JSON pointer, where a mutation patches it.
func (c *Catalog) atKindPath(p kindPath) (string, error) {
	kinds, ok := c.kindSets[p.KindSet]
	if !ok {
		return "", fmt.Errorf("no kind set is named %q", p.KindSet)
	}
	var b strings.Builder
	value, otherwise := func(k Kind) string { return strconv.Quote(jsonPointer(k.path)) }, `""`
	switch {
	case p.Pointer && p.Object != "":
		return "", fmt.Errorf("a pointer is the path's, not an object's: give pointer or object %q, not both", p.Object)
	case !p.Pointer && !identifier.MatchString(p.Object):
		return "", fmt.Errorf("object %q is not a CEL identifier (object or oldObject)", p.Object)
	case !p.Pointer:
		b.WriteString(p.Object + " == null ? {} : ")
		value = func(k Kind) string { return p.Object + ".?" + strings.Join(k.path, ".?") + ".orValue({})" }
		otherwise = "{}"
	}
	for _, k := range kinds.kinds {
		if len(k.path) == 0 {
			return "", fmt.Errorf("kind set %q gives %s no path", p.KindSet, k.Key())
		}
		fmt.Fprintf(&b, "(request.kind.group == %s && request.kind.kind == %s) ? %s : ",
			strconv.Quote(k.Group), strconv.Quote(k.Kind), value(k))
	}
	b.WriteString(otherwise)
	return b.String(), nil
}

// jsonPointer is a path as a JSON pointer (RFC 6901).
func jsonPointer(path []string) string {
	var b strings.Builder
	for _, segment := range path {
		b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(segment))
	}
	return b.String()
}

// linkCEL lists the variables a rule's CEL reads, in an order each can be
// declared in, and holds its claims to the CEL engines to its validation.
func (c *Catalog) linkCEL(r *Rule, variables map[string]*Variable, problems *problems) {
	kyverno, vap := r.Claims(EngineKyverno), r.Claims(EngineVAP)
	switch validates := r.HasCELValidation(); {
	case kyverno != vap:
		problems.add(r.loc, "rule %q claims one of kyverno and vap but not the other; both run its CEL translation", r.ID)
	case kyverno && !validates:
		problems.add(r.loc, "rule %q claims kyverno and vap, but no *%s file translates it", r.ID, CELSuffix)
	case !kyverno && validates:
		problems.add(r.loc, "rule %q has a CEL translation but does not claim kyverno and vap in its engines", r.ID)
	case !kyverno && r.NotExpressible == "":
		r.NotExpressible = "not expressible in CEL"
	}
	if r.CEL == nil {
		return
	}
	r.CEL.Variables = readVariables(r, variables, problems, r.CEL.Validation, r.CEL.Message)
	exprs := make([]string, len(r.CEL.Mutations))
	for i, m := range r.CEL.Mutations {
		exprs[i] = m.Expression
	}
	r.CEL.MutationVariables = readVariables(r, variables, problems, exprs...)
}

// readVariables are the variables the rule's expressions read, directly or
// through others, each after those it reads.
func readVariables(r *Rule, variables map[string]*Variable, problems *problems, exprs ...string) []Variable {
	var out []Variable
	visiting, done := map[string]bool{}, map[string]bool{}
	var visit func(name, from string)
	visit = func(name, from string) {
		v, ok := variables[name]
		switch {
		case slices.Contains(ProvidedVariables, name) || done[name]:
			return
		case !ok:
			problems.add(r.loc, "the CEL of rule %q reads variables.%s, which no *%s file defines", r.ID, name, CELSuffix)
			return
		case visiting[name]:
			problems.add(r.loc, "CEL variables %s and %s read each other", from, name)
			return
		}
		visiting[name] = true
		for _, dep := range v.uses {
			visit(dep, name)
		}
		visiting[name] = false
		done[name] = true
		out = append(out, Variable{Name: v.Name, Expression: v.Expression})
	}
	for _, name := range references(strings.Join(exprs, "\n")) {
		visit(name, "")
	}
	return out
}

// references are the variables an expression reads, in order, once each.
func references(expr string) []string {
	var out []string
	for _, m := range reference.FindAllStringSubmatch(expr, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// decode reads an entry of a *.cel file into v; false, with a problem, when
// it does not fit.
func decode(path string, node *yaml.Node, v any, problems *problems) bool {
	if err := node.Decode(v); err != nil {
		problems.at(path, node.Line, "%v", err)
		return false
	}
	return true
}

// ruleIndex is the index of the rule an entry of a *.cel file names
// (what it does for it: "translates"), -1 with a problem when no family
// declares it.
func (c *Catalog) ruleIndex(path string, line int, id, does string, problems *problems) int {
	i := slices.IndexFunc(c.rules, func(o Rule) bool { return o.ID == id })
	if i < 0 {
		problems.at(path, line, "%s rule %q, which no family declares", does, id)
	}
	return i
}

func checkSyntax(path string, line int, what, expr string, problems *problems) {
	if _, iss := celParser.Parse(expr); iss != nil && iss.Err() != nil {
		problems.at(path, line, "%s: %v", what, iss.Err())
	}
}
