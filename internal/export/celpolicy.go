package export

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/webhook/configuration"
)

// celPolicyName is the name of a rule's policy and binding.
func celPolicyName(rule string) string { return "tenantguard-" + rule }

// validationActions maps an enforcement mode to the actions of a
// ValidatingAdmissionPolicyBinding or a Kyverno ValidatingPolicy.
func validationActions(mode string) []any {
	switch mode {
	case "warn":
		return []any{"Warn"}
	case "dryrun":
		return []any{"Audit"}
	default:
		return []any{"Deny"}
	}
}

// celPolicySpec is the spec both engines share: what the rule matches (its
// kinds and subresources, with its operations; in tenant namespaces only
// unless it judges namespaces), its variables (registry and managers as
// given, then those its CEL reads) and its validation.
func celPolicySpec(r *catalog.Rule, tenantLabel, registryExpr, managersExpr string) map[string]any {
	return map[string]any{
		"failurePolicy":    "Fail",
		"matchConstraints": celMatch(r, r.Routes(false), tenantLabel),
		"matchConditions":  celMatchConditions(),
		"variables":        celVariables(r.CEL.Variables, registryExpr, managersExpr),
		"validations": []any{map[string]any{
			"expression":        r.CEL.Validation,
			"messageExpression": r.CEL.Message,
			"reason":            "Forbidden",
		}},
	}
}

// celVariables are a policy's variables: the registry and the managers as
// given, then the library's variables its expressions read.
func celVariables(vars []catalog.Variable, registryExpr, managersExpr string) []any {
	out := []any{
		map[string]any{"name": catalog.VariableRegistry, "expression": registryExpr},
		map[string]any{"name": catalog.VariableManagers, "expression": managersExpr},
	}
	for _, v := range vars {
		out = append(out, map[string]any{"name": v.Name, "expression": v.Expression})
	}
	return out
}

// celMatch are a policy's matchConstraints: the routes, in tenant
// namespaces only unless the rule judges namespaces.
func celMatch(r *catalog.Rule, routes []catalog.Route, tenantLabel string) map[string]any {
	rules := resourceRules(routes)
	if r.All {
		// Every namespaced resource (kinds token all); the rule's own
		// expressions leave out what it does not judge.
		rules = append(rules, map[string]any{"apiGroups": []any{"*"}, "apiVersions": []any{"*"}, "resources": anyList(configuration.EveryKindResources), "operations": anyList(r.Operations), "scope": "Namespaced"})
	}
	match := map[string]any{"resourceRules": rules}
	if !r.JudgesNamespaces() {
		match["namespaceSelector"] = map[string]any{"matchExpressions": []any{
			map[string]any{"key": tenantLabel, "operator": "Exists"},
		}}
	}
	return match
}

// celMatchConditions are the webhooks' matchConditions, which every policy
// carries.
func celMatchConditions() []any {
	out := make([]any, 0, len(configuration.MatchConditions))
	for _, c := range configuration.MatchConditions {
		out = append(out, map[string]any{"name": c.Name, "expression": c.Expression})
	}
	return out
}

// resourceRules match routes as the webhooks do (configuration.Rules), by
// API group.
func resourceRules(routes []catalog.Route) []any {
	routes = slices.Clone(routes)
	slices.SortStableFunc(routes, func(a, b catalog.Route) int { return strings.Compare(a.Group, b.Group) })
	rules := configuration.Rules(routes)
	out := make([]any, len(rules))
	for i, rule := range rules {
		ops := make([]string, len(rule.Operations))
		for j, op := range rule.Operations {
			ops[j] = string(op)
		}
		out[i] = map[string]any{"apiGroups": anyList(rule.APIGroups), "apiVersions": anyList(rule.APIVersions), "resources": anyList(rule.Resources), "operations": anyList(ops)}
	}
	return out
}

// celRules are the catalog's rules with a CEL validation.
func celRules(c *catalog.Catalog) []*catalog.Rule {
	var out []*catalog.Rule
	for i := range c.Rules() {
		if r := &c.Rules()[i]; r.HasCELValidation() {
			out = append(out, r)
		}
	}
	return out
}

// celCoverage is the coverage of a CEL engine: the rules with a CEL
// validation, and why the others have none. defaults names the kind of
// policy that sets the defaults of rules with CEL mutations, "" for an
// engine that sets none: its rules that mutate are covered with no default.
func celCoverage(c *catalog.Catalog, as, defaults string) map[string]string {
	out := map[string]string{}
	for _, r := range c.Rules() {
		text := "not covered: " + r.NotExpressible
		if r.HasCELValidation() {
			text = covered + " (" + as + " " + celPolicyName(r.ID) + ")"
		}
		switch {
		case r.HasCELMutations() && defaults != "":
			text += " and its default (" + defaults + " " + celPolicyName(r.ID) + ")"
		case r.Mutates:
			text += ", no default"
		}
		out[r.ID] = text
	}
	return out
}

// celRegistry is the registry as CEL reads it: plain JSON without nulls and
// empty maps, so that a missing list or map is absent (and read with
// orValue). An empty map in a parameter object is not a map to the API
// server's CEL (`in` on it finds no overload), hence the second.
func celRegistry(reg *registry.Snapshot) (map[string]any, error) {
	data, err := plainRegistry(reg)
	if err != nil {
		return nil, err
	}
	return withoutNulls(data).(map[string]any), nil
}

func withoutNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e == nil {
				continue
			}
			e = withoutNulls(e)
			if m, ok := e.(map[string]any); ok && len(m) == 0 {
				continue
			}
			out[k] = e
		}
		return out
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if e != nil {
				out = append(out, withoutNulls(e))
			}
		}
		return out
	default:
		return v
	}
}

// celLiteral writes plain JSON data as a CEL literal. Every element is
// wrapped in dyn() so that maps and lists of mixed values stay homogeneous,
// as the Kubernetes CEL environment requires of literals.
func celLiteral(v any) string {
	var b strings.Builder
	writeCEL(&b, v)
	return b.String()
}

func writeCEL(b *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		b.WriteString("{")
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(k))
			b.WriteString(": dyn(")
			writeCEL(b, x[k])
			b.WriteString(")")
		}
		b.WriteString("}")
	case []any:
		b.WriteString("[")
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("dyn(")
			writeCEL(b, e)
			b.WriteString(")")
		}
		b.WriteString("]")
	case string:
		b.WriteString(strconv.Quote(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			b.WriteString(strconv.FormatInt(int64(x), 10))
		} else {
			b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
		}
	case nil:
		b.WriteString("null")
	default:
		panic(fmt.Sprintf("celLiteral: %T is not plain JSON", v))
	}
}
