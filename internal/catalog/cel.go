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

// CELRule is a rule's CEL translation.
type CELRule struct {
	// Validation must hold for the request to be admitted; Message is the
	// CEL expression of the denial, "[rule-id] sentence".
	Validation, Message string
	// Variables are the library's variables it reads, directly or through
	// others, each after those it reads (ProvidedVariables come first and
	// are not listed).
	Variables []Variable
}

// celFile is a *.cel file.
type celFile struct {
	Variables []yaml.Node `yaml:"variables"`
	Rules     []yaml.Node `yaml:"rules"`
}

type celVariable struct {
	Name       string `yaml:"name"`
	Expression string `yaml:"expression"`
	// AtKindPath generates the expression: the object's field at the path
	// the kind set gives the request's kind, {} for other kinds.
	AtKindPath *struct {
		KindSet string `yaml:"kindSet"`
		Object  string `yaml:"object"`
	} `yaml:"atKindPath"`
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
			if err := node.Decode(&r); err != nil {
				problems.at(path, node.Line, "%v", err)
				continue
			}
			i := slices.IndexFunc(c.rules, func(o Rule) bool { return o.ID == r.ID })
			switch {
			case i < 0:
				problems.at(path, node.Line, "translates rule %q, which no family declares", r.ID)
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
			c.rules[i].CEL = &CELRule{Validation: r.Validation, Message: r.Message}
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
	if err := node.Decode(&v); err != nil {
		problems.at(path, node.Line, "%v", err)
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
		if expr, err = c.atKindPath(v.AtKindPath.KindSet, v.AtKindPath.Object); err != nil {
			problems.at(path, node.Line, "variable %q: %v", v.Name, err)
			return nil, false
		}
	}
	checkSyntax(path, node.Line, "variable "+v.Name, expr, problems)
	return &Variable{Name: v.Name, Expression: expr, uses: references(expr), file: path, line: node.Line}, true
}

// atKindPath is the CEL of an object's field at the path a kind set gives
// the request's kind: the pod spec of any pod carrier, say.
func (c *Catalog) atKindPath(set, object string) (string, error) {
	kinds, ok := c.kindSets[set]
	if !ok {
		return "", fmt.Errorf("no kind set is named %q", set)
	}
	if !identifier.MatchString(object) {
		return "", fmt.Errorf("object %q is not a CEL identifier (object or oldObject)", object)
	}
	var b strings.Builder
	b.WriteString(object + " == null ? {} : ")
	for _, k := range kinds.kinds {
		if len(k.path) == 0 {
			return "", fmt.Errorf("kind set %q gives %s no path", set, k.Key())
		}
		fmt.Fprintf(&b, "(request.kind.group == %s && request.kind.kind == %s) ? %s.?%s.orValue({}) : ",
			strconv.Quote(k.Group), strconv.Quote(k.Kind), object, strings.Join(k.path, ".?"))
	}
	b.WriteString("{}")
	return b.String(), nil
}

// linkCEL lists the variables a rule's CEL reads, in an order each can be
// declared in, and holds its claims to the CEL engines to its translation.
func (c *Catalog) linkCEL(r *Rule, variables map[string]*Variable, problems *problems) {
	kyverno, vap := r.Claims(EngineKyverno), r.Claims(EngineVAP)
	switch {
	case kyverno != vap:
		problems.add(r.loc, "rule %q claims one of kyverno and vap but not the other; both run its CEL translation", r.ID)
	case kyverno && r.CEL == nil:
		problems.add(r.loc, "rule %q claims kyverno and vap, but no *%s file translates it", r.ID, CELSuffix)
	case !kyverno && r.CEL != nil:
		problems.add(r.loc, "rule %q has a CEL translation but does not claim kyverno and vap in its engines", r.ID)
	case !kyverno && r.NotExpressible == "":
		r.NotExpressible = "not expressible in CEL"
	}
	if r.CEL == nil {
		return
	}
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
		r.CEL.Variables = append(r.CEL.Variables, Variable{Name: v.Name, Expression: v.Expression})
	}
	for _, name := range references(r.CEL.Validation + "\n" + r.CEL.Message) {
		visit(name, "")
	}
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

func checkSyntax(path string, line int, what, expr string, problems *problems) {
	if _, iss := celParser.Parse(expr); iss != nil && iss.Err() != nil {
		problems.at(path, line, "%s: %v", what, iss.Err())
	}
}
