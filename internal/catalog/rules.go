package catalog

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/tenantguard/tenantguard/internal/registry"
)

// Rule is one rule id as its family declares it.
type Rule struct {
	ID string
	// Family is the rule's package under data.tenantguard.rules.
	Family string
	// Title and Description come from the rule's METADATA.
	Title, Description string
	// Kinds are the kinds the rule judges, kind sets expanded; Counted
	// adds the resources the registry's quotas count.
	Kinds   []Kind
	Counted bool
	// All is set for a rule that judges every namespaced kind (kinds token
	// "all").
	All bool
	// Operations are the operations the rule must see (CREATE, UPDATE, DELETE).
	Operations []string
	// Mutates is set when the family's mutations act for this rule: the
	// mutating webhook must see its kinds.
	Mutates bool
	// Enforcement is the rule's default mode: deny, warn or dryrun.
	Enforcement string
	// Engines are the exports that claim the rule (EngineOPA ...); the
	// embedded engine decides every rule.
	Engines []string
	// NotExpressible says why the CEL engines do not claim the rule.
	NotExpressible string
	// Audit is false for a rule that makes no sense for an object that
	// already exists (METADATA custom: audit: false), e.g. one about who
	// changes or deletes: `tenantguard audit` and serve's background audit
	// leave it out. True unless the METADATA says otherwise.
	Audit bool
	// Reads are the parts of data.tenantguard the rule reads (METADATA
	// custom: reads), as dot-separated paths: registry.tenants.pods is the
	// pods entry of every tenant (and of the default tenant),
	// registry.settings.forceTenantPrefix one setting, runtime.managers
	// tenantguard's own user names, registry.tenants alone the tenants'
	// names (which tenants exist). The registry's tenant label is read by
	// every rule and needs no path. The Gatekeeper
	// export gives a Constraint these parts only; nil when undeclared, and
	// then it gives the whole registry.
	Reads []string
	// GatekeeperTemplate is how the Gatekeeper export writes the rule:
	// GatekeeperFamily (the default) in one ConstraintTemplate with the rest
	// of its family, GatekeeperRule in a template of its own, as
	// gatekeeper-library writes its pod security policies.
	GatekeeperTemplate string
	// Location is where the rule is declared, file:line.
	Location string
	// CEL is the rule's CEL translation; nil when it has none.
	CEL *CELRule

	loc *ast.Location
}

// The exports a rule can claim.
const (
	EngineOPA        = "opa"
	EngineGatekeeper = "gatekeeper"
	EngineKyverno    = "kyverno"
	EngineVAP        = "vap"
)

// How the Gatekeeper export groups rules into ConstraintTemplates.
const (
	GatekeeperFamily = "family"
	GatekeeperRule   = "rule"
)

// Engines are the exports, in the order they are listed.
var Engines = []string{EngineOPA, EngineGatekeeper, EngineKyverno, EngineVAP}

// Claims reports whether the rule claims an export.
func (r *Rule) Claims(engine string) bool { return slices.Contains(r.Engines, engine) }

// KindKeys are the rule's kinds as rules name them, "counted" included.
func (r *Rule) KindKeys() []string {
	out := make([]string, 0, len(r.Kinds)+1)
	for _, k := range r.Kinds {
		out = append(out, k.Key())
	}
	if r.Counted {
		out = append(out, Counted)
	}
	if r.All {
		out = append(out, All)
	}
	return out
}

// RulesPackage is the package under which each rule family is one package.
var RulesPackage = ast.MustParseRef("data.tenantguard.rules")

// declaration is the custom: fields of a rule's METADATA, merged over its
// package's.
type declaration struct {
	ID             string      `json:"id"`
	Kinds          []kindEntry `json:"kinds"`
	Subresources   []string    `json:"subresources"`
	Operations     []string    `json:"operations"`
	Mutates        bool        `json:"mutates"`
	Enforcement    string      `json:"enforcement"`
	Engines        []string    `json:"engines"`
	NotExpressible string      `json:"notExpressible"`
	Audit          *bool       `json:"audit"`
	Reads          []string    `json:"reads"`
	// GatekeeperTemplate is family or rule.
	GatekeeperTemplate string `json:"gatekeeperTemplate"`
}

// declare reads the kind sets and every family's rules from the modules'
// METADATA.
func (c *Catalog) declare(modules map[string]*ast.Module, problems *problems) {
	list := make([]*ast.Module, 0, len(modules))
	for _, path := range sortedKeys(modules) {
		list = append(list, modules[path])
	}
	annotations, errs := ast.BuildAnnotationSet(list)
	if len(errs) > 0 {
		problems.addError(errs)
		return
	}
	c.kindSets = kindSets(list, annotations, problems)
	families := map[string][]*ast.Module{}
	var names []string
	for _, m := range list {
		if family, ok := familyOf(m); ok {
			if families[family] == nil {
				names = append(names, family)
			}
			families[family] = append(families[family], m)
		}
	}
	seen := map[string]string{}
	for _, family := range names {
		for _, r := range c.family(family, families[family], annotations, problems) {
			if where, dup := seen[r.ID]; dup {
				problems.add(r.loc, "rule id %q is declared again; it is declared at %s", r.ID, where)
				continue
			}
			seen[r.ID] = r.Location
			c.rules = append(c.rules, r)
		}
	}
	slices.SortStableFunc(c.rules, func(a, b Rule) int { return cmp.Compare(a.Family, b.Family) })
}

// familyOf is the family of a module of package data.tenantguard.rules.FAMILY.
func familyOf(m *ast.Module) (string, bool) {
	path := m.Package.Path
	if len(path) != len(RulesPackage)+1 || !path.HasPrefix(RulesPackage) {
		return "", false
	}
	name, ok := path[len(path)-1].Value.(ast.String)
	return string(name), ok
}

// family reads the rules a family's modules (the files of its package)
// declare: every definition of violations that names its id in its head,
// with the METADATA of the one that declares it.
func (c *Catalog) family(family string, modules []*ast.Module, annotations *ast.AnnotationSet, problems *problems) []Rule {
	// OPA refuses a package's METADATA given in more than one of its files.
	var pkg *ast.Annotations
	for _, m := range modules {
		if pkg == nil {
			pkg = annotations.GetPackageScope(m.Package)
		}
	}
	var defaults map[string]any
	if pkg != nil {
		defaults = pkg.Custom
		if _, ok := defaults["id"]; ok {
			problems.add(pkg.Location, "a package's METADATA declares the defaults of its rules; id belongs on a violations rule")
		}
	}
	heads := map[string]*ast.Location{}
	declared := map[string]bool{}
	var out []Rule
	mutations := false
	var rules []*ast.Rule
	for _, m := range modules {
		rules = append(rules, m.Rules...)
	}
	for _, rule := range rules {
		switch rule.Head.Name.String() {
		case "mutations":
			mutations = true
			continue
		case "violations":
		default:
			continue
		}
		id, ok := headID(rule)
		if !ok {
			problems.add(rule.Location, `violations of a rule family must name the rule id as a string in the rule's head: violations contains {"id": "my-rule", "msg": msg} if ...`)
			continue
		}
		if _, ok := heads[id]; !ok {
			heads[id] = rule.Location
		}
		own := annotatedWith(annotations, rule, "id")
		if own == nil {
			continue
		}
		if own.Custom["id"] != id {
			problems.add(own.Location, "METADATA declares rule id %v on a violations rule whose head names %q", own.Custom["id"], id)
			continue
		}
		if declared[id] {
			problems.add(own.Location, "rule id %q is declared again in family %q; declare it once, on its first violations rule", id, family)
			continue
		}
		declared[id] = true
		r, ok := c.rule(family, pkg, own, merged(defaults, own.Custom), problems)
		if ok {
			out = append(out, r)
		}
	}
	for _, id := range sortedKeys(heads) {
		if !declared[id] {
			problems.add(heads[id], "rule id %q has no METADATA declaring it: put # METADATA with custom: id: %s (and its kinds) above its first violations rule", id, id)
		}
	}
	mutating := slices.ContainsFunc(out, func(r Rule) bool { return r.Mutates })
	switch where := modules[0].Package.Location; {
	case mutations && !mutating && len(out) > 0:
		problems.add(where, "family %q has mutations but none of its rules says mutates: true, so the mutating webhook would not route them", family)
	case mutating && !mutations:
		problems.add(where, "family %q declares a rule that mutates but has no mutations rule", family)
	}
	return out
}

// annotatedWith is the METADATA of a rule that has the custom field key,
// nil when none has.
func annotatedWith(annotations *ast.AnnotationSet, rule *ast.Rule, key string) *ast.Annotations {
	var out *ast.Annotations
	for _, a := range annotations.GetRuleScope(rule) {
		if _, ok := a.Custom[key]; ok {
			out = a
		}
	}
	return out
}

// headID is the rule id a violations definition's head names.
func headID(rule *ast.Rule) (string, bool) {
	obj, ok := rule.Head.Key.Value.(ast.Object)
	if !ok {
		return "", false
	}
	t := obj.Get(ast.InternedTerm("id"))
	if t == nil {
		return "", false
	}
	s, ok := t.Value.(ast.String)
	return string(s), ok
}

// merged is a rule's custom fields over its package's.
func merged(defaults, own map[string]any) map[string]any {
	out := make(map[string]any, len(defaults)+len(own))
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range own {
		out[k] = v
	}
	return out
}

// rule checks one declaration and resolves its kinds.
func (c *Catalog) rule(family string, pkg, own *ast.Annotations, custom map[string]any, problems *problems) (Rule, bool) {
	var d declaration
	raw, _ := json.Marshal(custom)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		problems.add(own.Location, "METADATA custom fields: %v; the fields are id, kinds, subresources, operations, mutates, enforcement, engines, notExpressible, audit, reads, gatekeeperTemplate", err)
		return Rule{}, false
	}
	loc := own.Location
	r := Rule{
		ID: d.ID, Family: family, Title: own.Title, Description: strings.TrimSpace(own.Description),
		Operations: d.Operations, Mutates: d.Mutates, Enforcement: cmp.Or(d.Enforcement, registry.ModeDeny),
		Engines: d.Engines, NotExpressible: d.NotExpressible, Audit: d.Audit == nil || *d.Audit,
		Reads: d.Reads, GatekeeperTemplate: cmp.Or(d.GatekeeperTemplate, GatekeeperFamily), Location: fmt.Sprintf("%s:%d", loc.File, loc.Row), loc: loc,
	}
	if r.Title == "" && pkg != nil {
		r.Title = pkg.Title
	}
	before := len(problems.list)
	if !ruleID.MatchString(r.ID) {
		problems.add(loc, "rule id %q must be lower-case words joined by dashes, e.g. host-network", r.ID)
	}
	c.resolveKinds(&r, d, loc, problems)
	if len(r.Operations) == 0 {
		problems.add(loc, "rule %q names no operations: say which of CREATE, UPDATE, DELETE it must see", r.ID)
	}
	for _, op := range r.Operations {
		if !slices.Contains([]string{"CREATE", "UPDATE", "DELETE"}, op) {
			problems.add(loc, "rule %q: operation %q is not CREATE, UPDATE or DELETE", r.ID, op)
		}
	}
	if !slices.Contains([]string{registry.ModeDeny, registry.ModeWarn, registry.ModeDryRun}, r.Enforcement) {
		problems.add(loc, "rule %q: enforcement %q is not deny, warn or dryrun", r.ID, r.Enforcement)
	}
	for _, e := range r.Engines {
		if !slices.Contains(Engines, e) {
			problems.add(loc, "rule %q: engine %q is not one of %s (tenantguard itself decides every rule)", r.ID, e, strings.Join(Engines, ", "))
		}
	}
	if !slices.Contains([]string{GatekeeperFamily, GatekeeperRule}, r.GatekeeperTemplate) {
		problems.add(loc, "rule %q: gatekeeperTemplate %q is not %s or %s", r.ID, r.GatekeeperTemplate, GatekeeperFamily, GatekeeperRule)
	}
	for _, path := range r.Reads {
		if !readPath.MatchString(path) {
			problems.add(loc, "rule %q: reads %q is not a dot-separated path under registry or runtime, e.g. registry.tenants.pods", r.ID, path)
		}
	}
	if !r.Claims(EngineOPA) {
		problems.add(loc, "rule %q must claim opa: the OPA bundle is the library itself, and decides every rule of it", r.ID)
	}
	return r, len(problems.list) == before
}

// readPath is a path of data.tenantguard a rule may read.
var readPath = regexp.MustCompile(`^(registry|runtime)(\.[A-Za-z][A-Za-z0-9]*)+$`)

// ruleID is lower-case words joined by dashes.
var ruleID = regexp.MustCompile(`^[a-z]+(-[a-z0-9]+)*$`)

// resolveKinds expands kind sets and attaches rule-level subresources to
// their kinds.
func (c *Catalog) resolveKinds(r *Rule, d declaration, loc *ast.Location, problems *problems) {
	if len(d.Kinds) == 0 {
		problems.add(loc, "rule %q names no kinds: say which kinds it judges (Pod, apps/Deployment, a kind set such as pod-carriers, or counted)", r.ID)
	}
	add := func(k Kind) {
		if i := slices.IndexFunc(r.Kinds, func(o Kind) bool { return o.Key() == k.Key() }); i >= 0 {
			r.Kinds[i].Subresources = union(r.Kinds[i].Subresources, k.Subresources)
			r.Kinds[i].ClusterScoped = r.Kinds[i].ClusterScoped || k.ClusterScoped
			if r.Kinds[i].Operations != nil || k.Operations != nil {
				problems.add(loc, "rule %q: %s is listed more than once (by name or in a kind set) and narrowed by operations; list a kind the rule sees in fewer operations once, and in no kind set", r.ID, k.Key())
			}
			return
		}
		k.Subresources = slices.Clone(k.Subresources)
		r.Kinds = append(r.Kinds, k)
	}
	for _, entry := range d.Kinds {
		switch name, set, isSet := entry.name, c.kindSets[entry.name].kinds, c.kindSets[entry.name].kinds != nil; {
		case name == Counted:
			r.Counted = true
		case name == All:
			r.All = true
		case isSet:
			for _, k := range set {
				add(k)
			}
		case setName.MatchString(name):
			problems.add(loc, "rule %q: no kind set is named %q; kind sets are %s", r.ID, name, strings.Join(sortedKeys(c.kindSets), ", "))
		default:
			k, err := parseKind(name, entry.resource)
			if err != nil {
				problems.add(loc, "rule %q: %v", r.ID, err)
				continue
			}
			if entry.cluster && scheme.Scheme.IsGroupRegistered(k.Group) {
				problems.add(loc, "rule %q: %s is a built-in kind, whose scope tenantguard knows: scope is for the kinds of other APIs", r.ID, name)
				continue
			}
			k.ClusterScoped = entry.cluster
			if entry.operations != nil {
				k.Operations = inOrder(union(nil, entry.operations))
				if extra := slices.DeleteFunc(slices.Clone(k.Operations), func(op string) bool { return slices.Contains(r.Operations, op) }); len(extra) > 0 || len(k.Operations) == 0 {
					problems.add(loc, "rule %q: the operations of %s (%s) narrow the rule's: name one or more of %s", r.ID, name, strings.Join(k.Operations, ", "), strings.Join(r.Operations, ", "))
					continue
				}
				if len(k.Operations) == len(union(nil, r.Operations)) {
					k.Operations = nil // all of the rule's: nothing narrowed
				}
			}
			add(k)
		}
	}
	for _, sub := range d.Subresources {
		resource, name, ok := strings.Cut(sub, "/")
		i := slices.IndexFunc(r.Kinds, func(k Kind) bool { return k.Resource == resource })
		if !ok || i < 0 {
			problems.add(loc, "rule %q: subresource %q is not resource/subresource of one of its kinds", r.ID, sub)
			continue
		}
		if err := judgeableSubresource(name); err != nil {
			problems.add(loc, "rule %q: subresource %q: %v", r.ID, sub, err)
			continue
		}
		if ops := r.Kinds[i].Operations; ops != nil && !slices.Contains(ops, "UPDATE") {
			problems.add(loc, "rule %q: subresource %q is only ever updated, and the rule's operations for %s (%s) leave out UPDATE", r.ID, sub, r.Kinds[i].Key(), strings.Join(ops, ", "))
			continue
		}
		r.Kinds[i].Subresources = union(r.Kinds[i].Subresources, []string{sub})
	}
}

// sameKindSubresources are the subresources whose requests are updates of
// the object itself, of its own kind, which a rule judges as it judges the
// object. The others carry another kind (scale: autoscaling/Scale;
// eviction, binding, token: creates of their own kinds) or none (exec,
// attach, proxy: connections), which the library's routing by the
// request's kind would never bring to the rule.
var sameKindSubresources = []string{"status", "finalize", "ephemeralcontainers", "resize", "approval"}

// judgeableSubresource refuses a subresource whose requests a rule of the
// object's kind would never see.
func judgeableSubresource(name string) error {
	if slices.Contains(sameKindSubresources, name) {
		return nil
	}
	return fmt.Errorf("its requests are not updates of the object's own kind, so no rule of that kind would see them; a rule may name %s", strings.Join(sameKindSubresources, ", "))
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// kindSets are the kind sets the library defines: rules whose METADATA
// says custom: kindSet: NAME and whose value is a constant object from each
// kind to the dot-separated path of what the set is about in it (a pod
// carrier's pod spec); custom: subresources: {KIND: [SUBRESOURCE...]}
// names the subresources the webhooks must send for a kind too.
func kindSets(modules []*ast.Module, annotations *ast.AnnotationSet, problems *problems) map[string]kindSet {
	out := map[string]kindSet{}
	for _, m := range modules {
		for _, rule := range m.Rules {
			a := annotatedWith(annotations, rule, "kindSet")
			if a == nil {
				continue
			}
			name, _ := a.Custom["kindSet"].(string)
			if !setName.MatchString(name) || name == Counted || name == All {
				problems.add(a.Location, "kind set name %q must be lower-case words joined by dashes, and not %q or %q", name, Counted, All)
				continue
			}
			if _, dup := out[name]; dup {
				problems.add(a.Location, "kind set %q is defined twice", name)
				continue
			}
			kinds, err := kindSetValue(rule, a.Custom["subresources"])
			if err != nil {
				problems.add(rule.Location, "kind set %q: %v", name, err)
				continue
			}
			title := a.Title
			if title == "" {
				title = name
			}
			out[name] = kindSet{kinds: kinds, title: title, rule: rule.Ref().String()}
		}
	}
	return out
}

// kindSet is a set of kinds the library defines, e.g. the pod carriers.
type kindSet struct {
	kinds []Kind
	// title is its METADATA's; rule is where it is, data.PACKAGE.RULE.
	title, rule string
}

// kindSetValue reads a kind set rule's constant object of paths, and the
// subresources its METADATA gives by kind.
func kindSetValue(rule *ast.Rule, subresources any) ([]Kind, error) {
	if rule.Head.Value == nil || !rule.Head.Value.IsGround() || !rule.Body.Equal(ast.NewBody(ast.NewExpr(ast.BooleanTerm(true)))) {
		return nil, fmt.Errorf("must be a constant object: %s := {\"Pod\": \"spec\", ...}", rule.Head.Name)
	}
	v, err := ast.JSON(rule.Head.Value.Value)
	if err != nil {
		return nil, err
	}
	paths, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be an object from each kind to a dot-separated path")
	}
	subs, ok := subresources.(map[string]any)
	if subresources != nil && !ok {
		return nil, fmt.Errorf("subresources must map kinds to lists of subresources, e.g. {Pod: [ephemeralcontainers]}")
	}
	for key, list := range subs {
		if _, ok := paths[key]; !ok {
			return nil, fmt.Errorf("subresources of %s, which is not in the set", key)
		}
		if _, ok := list.([]any); !ok {
			return nil, fmt.Errorf("the subresources of %s must be a list, e.g. [ephemeralcontainers]", key)
		}
	}
	var kinds []Kind
	for _, key := range sortedKeys(paths) {
		k, err := parseKind(key, "")
		if err != nil {
			return nil, err
		}
		path, ok := paths[key].(string)
		if !ok || path == "" {
			return nil, fmt.Errorf("the path of %s must be a dot-separated string such as spec.template.spec", key)
		}
		k.path = strings.Split(path, ".")
		list, _ := subs[key].([]any)
		for _, sub := range list {
			if err := judgeableSubresource(fmt.Sprint(sub)); err != nil {
				return nil, fmt.Errorf("subresource %v of %s: %w", sub, key, err)
			}
			k.Subresources = append(k.Subresources, fmt.Sprintf("%s/%v", k.Resource, sub))
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}
