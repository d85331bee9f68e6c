package export

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/usage"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// gatekeeperLibRoot is where Gatekeeper requires template libraries to live.
const gatekeeperLibRoot = "lib"

// Gatekeeper builds the Gatekeeper library for reg, written as Gatekeeper
// users write policy: a SyncSet replicating what the referential rules
// read; one ConstraintTemplate per rule family (per rule for a family whose
// METADATA says gatekeeperTemplate: rule, as gatekeeper-library writes its
// pod security policies), each holding the family's Rego and the library
// modules it imports, renamed under data.lib, with tenantguard.gatekeeper as
// the adapter; and for each template one Constraint per enforcement mode
// its rules are in (one in all but a mixed registry), matching its rules'
// kinds, whose parameters are the parts of the registry its rules read
// (their METADATA's reads), not the whole registry. A review thus evaluates
// each family once.
func Gatekeeper(reg *registry.Snapshot, opts Options) (*Library, error) {
	cat, err := library(opts.Catalog)
	if err != nil {
		return nil, err
	}
	data, err := plainRegistry(reg)
	if err != nil {
		return nil, err
	}
	sync, unsynced := syncKinds(reg)
	lib := &Library{Coverage: map[string]string{}}
	lib.Objects = append(lib.Objects, map[string]any{
		"apiVersion": "syncset.gatekeeper.sh/v1alpha1",
		"kind":       "SyncSet",
		"metadata":   map[string]any{"name": "tenantguard"},
		"spec":       map[string]any{"gvks": sync},
	})
	units := gatekeeperUnits(cat)
	var constraints []map[string]any
	for _, u := range units {
		template, err := u.template(cat, sync, reg)
		if err != nil {
			return nil, err
		}
		lib.Objects = append(lib.Objects, template)
		for _, c := range u.constraints(reg) {
			var ids []string
			for _, r := range c.rules {
				ids = append(ids, r.ID)
			}
			constraints = append(constraints, map[string]any{
				"apiVersion": "constraints.gatekeeper.sh/v1beta1",
				"kind":       u.kind(),
				"metadata":   map[string]any{"name": c.name},
				"spec": map[string]any{
					"enforcementAction": c.mode,
					"match":             gatekeeperMatch(c.rules),
					"parameters":        u.parameters(ids, data, opts.Managers),
				},
			})
			for _, r := range c.rules {
				text := fmt.Sprintf("%s (template %s, Constraint %s)", covered, u.kind(), c.name)
				if slices.ContainsFunc(r.Routes(false), func(route catalog.Route) bool { return slices.Contains(route.Operations, "DELETE") }) {
					text += "; deletions only with Gatekeeper's enableDeleteOperations"
				}
				if r.Counted && len(unsynced) > 0 {
					text += "; add the kinds of " + strings.Join(unsynced, ", ") + " to the SyncSet, they are not built-in resources"
				}
				lib.Coverage[r.ID] = text
			}
		}
	}
	lib.Objects = append(lib.Objects, constraints...)
	for i := range cat.Rules() {
		r := &cat.Rules()[i]
		if !r.Claims(catalog.EngineGatekeeper) {
			lib.Coverage[r.ID] = "not covered: the rule does not claim Gatekeeper"
		}
	}
	return lib, nil
}

// gatekeeperUnit is what one ConstraintTemplate holds: a rule family, or
// one rule of a family written a template per rule.
type gatekeeperUnit struct {
	family string
	// rule is the rule id of a template of one rule, "" for a family's.
	rule  string
	rules []*catalog.Rule
}

// gatekeeperUnits are the templates of the rules that claim Gatekeeper, in
// the catalog's order.
func gatekeeperUnits(cat *catalog.Catalog) []*gatekeeperUnit {
	var units []*gatekeeperUnit
	byFamily := map[string]*gatekeeperUnit{}
	for i := range cat.Rules() {
		r := &cat.Rules()[i]
		if !r.Claims(catalog.EngineGatekeeper) {
			continue
		}
		if r.GatekeeperTemplate == catalog.GatekeeperRule {
			units = append(units, &gatekeeperUnit{family: r.Family, rule: r.ID, rules: []*catalog.Rule{r}})
			continue
		}
		u, ok := byFamily[r.Family]
		if !ok {
			u = &gatekeeperUnit{family: r.Family}
			byFamily[r.Family] = u
			units = append(units, u)
		}
		u.rules = append(u.rules, r)
	}
	return units
}

// name is the template's unit: its family or its rule id.
func (u *gatekeeperUnit) name() string { return cmp.Or(u.rule, u.family) }

// kind is the Constraint kind of the unit, e.g. TenantguardPriority,
// TenantguardHostNetwork.
func (u *gatekeeperUnit) kind() string {
	var b strings.Builder
	b.WriteString("Tenantguard")
	for word := range strings.SplitSeq(u.name(), "-") {
		b.WriteString(strings.ToUpper(word[:1]) + word[1:])
	}
	return b.String()
}

// reads are the parts of data.tenantguard the unit's rules read; ok is
// false when a rule declares none, and then the whole registry is given.
func (u *gatekeeperUnit) reads() (reads []string, ok bool) {
	for _, r := range u.rules {
		if r.Reads == nil {
			return nil, false
		}
		for _, p := range r.Reads {
			if !slices.Contains(reads, p) {
				reads = append(reads, p)
			}
		}
	}
	slices.Sort(reads)
	return reads, true
}

// gatekeeperConstraint is one Constraint of a unit: the rules in one
// enforcement mode.
type gatekeeperConstraint struct {
	name, mode string
	rules      []*catalog.Rule
}

// constraints are the unit's Constraints: one per enforcement mode its
// rules are in under reg, named after the unit, or after the unit and the
// mode when its rules are in several, since a Constraint has one
// enforcementAction.
func (u *gatekeeperUnit) constraints(reg *registry.Snapshot) []gatekeeperConstraint {
	var out []gatekeeperConstraint
	for _, m := range []string{registry.ModeDeny, registry.ModeWarn, registry.ModeDryRun} {
		c := gatekeeperConstraint{name: u.name(), mode: m}
		for _, r := range u.rules {
			if mode(reg, r) == m {
				c.rules = append(c.rules, r)
			}
		}
		if len(c.rules) > 0 {
			out = append(out, c)
		}
	}
	if len(out) > 1 {
		for i := range out {
			out[i].name += "-" + out[i].mode
		}
	}
	return out
}

// parameters are a Constraint's: its rule ids, the registry pruned to what
// the unit's rules read (the tenant label, tenant names and the default
// tenant always), and tenantguard's own user names when a rule reads them.
func (u *gatekeeperUnit) parameters(ids []string, data map[string]any, managers []string) map[string]any {
	out := map[string]any{"rules": anyList(ids)}
	reads, ok := u.reads()
	if !ok {
		out["registry"] = data
		out["managers"] = managersOrDefault(managers)
		return out
	}
	out["registry"] = pruneRegistry(data, reads)
	if slices.Contains(reads, "runtime.managers") {
		out["managers"] = managersOrDefault(managers)
	}
	return out
}

// pruneRegistry is the registry data holding only the paths read, each
// path under registry.: tenants.X is X of every tenant and of the default
// tenant; an object on the way is kept (empty) when the registry has it,
// so that a rule telling "set" from "absent" tells the same. The tenant
// label and the default tenant are always there. A tenant whose entry is
// the default tenant's, on the paths read, is left out (a tenant the
// registry lacks gets the default tenant's entry) unless the rules read
// the tenants' names (registry.tenants): a Constraint then lists the
// tenants that differ from the default only, as a gatekeeper-library
// Constraint lists its exemptions.
func pruneRegistry(data map[string]any, reads []string) map[string]any {
	settings, _ := data["settings"].(map[string]any)
	out := map[string]any{"settings": map[string]any{"tenantLabel": settings["tenantLabel"]}}
	tenants, _ := data["tenants"].(map[string]any)
	prunedTenants := make(map[string]any, len(tenants))
	for name := range tenants {
		prunedTenants[name] = map[string]any{"name": name}
	}
	out["tenants"] = prunedTenants
	defaultTenant, _ := data["defaultTenant"].(map[string]any)
	prunedDefault := map[string]any{"name": defaultTenant["name"]}
	out["defaultTenant"] = prunedDefault
	names := false
	for _, read := range reads {
		path, ok := strings.CutPrefix(read, "registry.")
		if !ok {
			continue
		}
		segments := strings.Split(path, ".")
		switch {
		case path == "tenants":
			names = true
		case segments[0] == "tenants":
			for name, t := range tenants {
				if t, ok := t.(map[string]any); ok {
					copyPath(t, prunedTenants[name].(map[string]any), segments[1:])
				}
			}
			copyPath(defaultTenant, prunedDefault, segments[1:])
		default:
			copyPath(data, out, segments)
		}
	}
	if !names {
		for name, t := range prunedTenants {
			entry := maps.Clone(t.(map[string]any))
			entry["name"] = prunedDefault["name"]
			if reflect.DeepEqual(entry, prunedDefault) {
				delete(prunedTenants, name)
			}
		}
	}
	return out
}

// copyPath copies the value at path from src into dst, making the objects
// on the way.
func copyPath(src, dst map[string]any, path []string) {
	if len(path) == 0 {
		return
	}
	v, ok := src[path[0]]
	if !ok {
		return
	}
	if len(path) == 1 {
		dst[path[0]] = v
		return
	}
	next, ok := v.(map[string]any)
	if !ok {
		return
	}
	into, ok := dst[path[0]].(map[string]any)
	if !ok {
		into = map[string]any{}
		dst[path[0]] = into
	}
	copyPath(next, into, path[1:])
}

// gatekeeperMatch is what a Constraint of rules matches: their kinds, or,
// when a rule judges the counted resources or every kind, every namespaced
// kind (a Namespace, whose requests carry its own name as namespace, is
// left to the rules that judge namespaces), and every kind when a rule
// judges every kind and Namespaces, or when rules of every namespaced kind
// and of Namespaces share the Constraint.
func gatekeeperMatch(rules []*catalog.Rule) map[string]any {
	every := map[string]any{"kinds": []any{map[string]any{"apiGroups": []any{"*"}, "kinds": []any{"*"}}}}
	var kinds []catalog.Kind
	broad, namespaces := false, false
	for _, r := range rules {
		if r.All && r.JudgesNamespaces() {
			return every
		}
		broad = broad || r.All || r.Counted
		namespaces = namespaces || r.JudgesNamespaces()
		for _, k := range r.Kinds {
			if !slices.ContainsFunc(kinds, func(o catalog.Kind) bool { return o.Key() == k.Key() }) {
				kinds = append(kinds, k)
			}
		}
	}
	switch {
	case broad && namespaces:
		return every
	case broad:
		every["scope"] = "Namespaced"
		return every
	}
	groups, byGroup := groupKinds(kinds, func(k catalog.Kind) []any { return []any{k.Kind} })
	out := make([]any, 0, len(groups))
	for _, g := range groups {
		out = append(out, map[string]any{"apiGroups": []any{g}, "kinds": byGroup[g]})
	}
	return map[string]any{"kinds": out}
}

// template is the unit's ConstraintTemplate: three lines of Rego calling
// the adapter, the library modules it needs as libs, the schema of its
// parameters, and the kinds it needs replicated.
func (u *gatekeeperUnit) template(cat *catalog.Catalog, sync []any, reg *registry.Snapshot) (map[string]any, error) {
	libs, err := u.libs(cat)
	if err != nil {
		return nil, err
	}
	rego := fmt.Sprintf(`package tenantguard.%s

import data.lib.tenantguard.gatekeeper

violation contains {"msg": v.msg, "details": {"rule": v.rule}} if some v in gatekeeper.violations(%q)
`, strings.ReplaceAll(u.name(), "-", "_"), u.family)
	metadata := map[string]any{"name": strings.ToLower(u.kind())}
	if needed := u.syncNeeds(sync, reg); len(needed) > 0 {
		// one requirement per kind: each is needed, none stands in for another
		requirements := make([]any, len(needed))
		for i, gvk := range needed {
			requirements[i] = []any{gvk}
		}
		requires, err := json.Marshal(requirements)
		if err != nil {
			return nil, err
		}
		metadata["annotations"] = map[string]any{"metadata.gatekeeper.sh/requires-sync-data": string(requires)}
	}
	description := "tenantguard rule family " + u.family
	if u.rule != "" {
		description = "tenantguard rule " + u.rule
	}
	if len(u.rules) == 1 && u.rules[0].Title != "" {
		description += ": " + u.rules[0].Title
	}
	title := u.family
	if u.rule != "" {
		title = u.rule
	}
	metadata["annotations"] = mergeAnnotations(metadata["annotations"], map[string]any{"metadata.gatekeeper.sh/title": "tenantguard " + title, "description": description})
	return map[string]any{
		"apiVersion": "templates.gatekeeper.sh/v1",
		"kind":       "ConstraintTemplate",
		"metadata":   metadata,
		"spec": map[string]any{
			"crd": map[string]any{"spec": map[string]any{
				"names": map[string]any{"kind": u.kind()},
				"validation": map[string]any{
					"legacySchema":    false,
					"openAPIV3Schema": u.parametersSchema(),
				},
			}},
			"targets": []any{map[string]any{
				"target": "admission.k8s.gatekeeper.sh",
				"code": []any{map[string]any{
					"engine": "Rego",
					"source": map[string]any{"version": "v1", "rego": rego, "libs": libs},
				}},
			}},
		},
	}, nil
}

func mergeAnnotations(a any, b map[string]any) map[string]any {
	out := map[string]any{}
	if m, ok := a.(map[string]any); ok {
		for k, v := range m {
			out[k] = v
		}
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// syncNeeds are the entries of the SyncSet the unit's rules read from the
// inventory: every one for rules that declare no reads; else Namespaces
// for a rule that counts, owns or collides beyond the request's namespace,
// the counted kinds for one reading quotas, pods and claims for one reading
// resourceQuota and the kinds that serve hosts for one reading
// hostnameCollision. A rule reading its own namespace only
// has it from the review's namespaceObject and needs nothing replicated.
func (u *gatekeeperUnit) syncNeeds(sync []any, reg *registry.Snapshot) []any {
	reads, ok := u.reads()
	if !ok {
		return sync
	}
	var gvks []schema.GroupVersionKind
	namespace := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	for _, read := range reads {
		switch read {
		case "registry.owners", "registry.tenants.namespaceQuota":
			gvks = append(gvks, namespace)
		case "registry.tenants.quotas":
			gvks = append(gvks, namespace)
			for _, gr := range reg.QuotaResources() {
				if gvk, ok := kindOf(gr); ok {
					gvks = append(gvks, gvk)
				}
			}
		case "registry.tenants.resourceQuota":
			gvks = append(gvks, namespace, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"},
				usage.ResourceClaimKind.WithVersion("v1"))
		case "registry.tenants.ingress.hostnameCollision":
			gvks = append(gvks, namespace)
			for _, k := range clusterview.HostKinds() {
				gvks = append(gvks, schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind})
			}
		}
	}
	var out []any
	for _, entry := range sync {
		m := entry.(map[string]any)
		gvk := schema.GroupVersionKind{Group: m["groups"].([]any)[0].(string), Version: m["versions"].([]any)[0].(string), Kind: m["kinds"].([]any)[0].(string)}
		if slices.Contains(gvks, gvk) {
			out = append(out, entry)
		}
	}
	return out
}

// libs are the modules the unit's template needs, tests left out: the
// adapter, the unit's family (for a template of one rule, with only that
// rule's violations) and the library packages they import, each with
// every package and reference under data.tenantguard moved under
// data.lib.tenantguard, comments dropped, in a stable order.
func (u *gatekeeperUnit) libs(cat *catalog.Catalog) ([]any, error) {
	modules := cat.Modules()
	parsed := map[string]*ast.Module{}
	byPackage := map[string][]string{}
	for path, src := range modules {
		module, err := catalog.ParseModule(path, src)
		if err != nil {
			return nil, err
		}
		parsed[path] = module
		pkg := module.Package.Path.String()
		byPackage[pkg] = append(byPackage[pkg], path)
	}
	rulesRef := catalog.RulesPackage.String()
	needed := map[string]bool{}
	var visit func(pkg string)
	visit = func(pkg string) {
		for _, path := range byPackage[pkg] {
			if needed[path] {
				continue
			}
			needed[path] = true
			for _, imp := range parsed[path].Imports {
				ref, ok := imp.Path.Value.(ast.Ref)
				if !ok || ref.String() == rulesRef {
					continue // the unit's own family is the one rule family it gets
				}
				visit(ref.String())
			}
		}
	}
	visit("data." + Root + ".gatekeeper")
	visit(rulesRef + "." + u.family)
	paths := make([]string, 0, len(needed))
	for path := range needed {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	libs := make([]any, 0, len(paths))
	for _, path := range paths {
		module := parsed[path]
		if family, ok := familyOf(module); ok && family == u.family {
			module = gatekeeperFamilyModule(module, u.rule)
		}
		src, err := gatekeeperLib(module)
		if err != nil {
			return nil, fmt.Errorf("formatting %s for Gatekeeper: %w", path, err)
		}
		libs = append(libs, src)
	}
	return libs, nil
}

// familyOf is the family of a module of a rule family's package.
func familyOf(m *ast.Module) (string, bool) {
	path := m.Package.Path
	if len(path) != len(catalog.RulesPackage)+1 || !path.HasPrefix(catalog.RulesPackage) {
		return "", false
	}
	name, ok := path[len(path)-1].Value.(ast.String)
	return string(name), ok
}

// gatekeeperFamilyModule is a family's module as a Gatekeeper template
// holds it: without its mutations (Gatekeeper validates only) and, for a
// template of one rule, without the violations of the family's other
// rules, so that the template evaluates its rule alone.
func gatekeeperFamilyModule(m *ast.Module, rule string) *ast.Module {
	out := m.Copy()
	out.Rules = slices.DeleteFunc(out.Rules, func(r *ast.Rule) bool {
		switch r.Head.Name.String() {
		case "mutations":
			return true
		case "violations":
			return rule != "" && violationID(r) != rule
		}
		return false
	})
	return out
}

// violationID is the rule id a violations definition's head names.
func violationID(r *ast.Rule) string {
	obj, ok := r.Head.Key.Value.(ast.Object)
	if !ok {
		return ""
	}
	if t := obj.Get(ast.InternedTerm("id")); t != nil {
		if s, ok := t.Value.(ast.String); ok {
			return string(s)
		}
	}
	return ""
}

// gatekeeperMoves are where what the library reads as data goes in a
// Gatekeeper template, which has no room for data of its own (data.lib
// holds code only): the adapter passes the registry, the runtime and the
// catalog in the input, and the library moves under data.lib.
var gatekeeperMoves = [][2]ast.Ref{
	{ast.MustParseRef("data." + Root + ".registry"), ast.MustParseRef("input." + Root + ".registry")},
	{ast.MustParseRef("data." + Root + ".runtime"), ast.MustParseRef("input." + Root + ".runtime")},
	{ast.MustParseRef("data." + Root + ".catalog"), ast.MustParseRef("input." + Root + ".catalog")},
	{ast.MustParseRef("data.kubernetes"), ast.MustParseRef("input." + Root + ".kubernetes")},
	{ast.MustParseRef("data." + Root), ast.MustParseRef("data." + gatekeeperLibRoot + "." + Root)},
}

// gatekeeperLib is a module with its references moved (gatekeeperMoves),
// comments and METADATA dropped, formatted as Rego v1.
func gatekeeperLib(module *ast.Module) (string, error) {
	move := func(ref ast.Ref) ast.Ref {
		for _, m := range gatekeeperMoves {
			if ref.HasPrefix(m[0]) {
				return m[1].Concat(ref[len(m[0]):])
			}
		}
		return ref
	}
	rewritten, err := ast.TransformRefs(module.Copy(), func(ref ast.Ref) (ast.Value, error) { return move(ref), nil })
	if err != nil {
		return "", err
	}
	module = rewritten.(*ast.Module)
	// the targets of `with` are not among the refs TransformRefs visits
	ast.WalkWiths(module, func(w *ast.With) bool {
		if ref, ok := w.Target.Value.(ast.Ref); ok {
			w.Target.Value = move(ref)
		}
		return false
	})
	module.Comments = nil
	module.Annotations = nil
	src, err := format.AstWithOpts(module, format.Opts{RegoVersion: ast.RegoV1})
	if err != nil {
		return "", err
	}
	return string(src), nil
}

// syncKinds are the kinds the referential rules read from Gatekeeper's
// inventory: namespaces, every counted resource of a
// built-in kind, and, when a tenant refuses hostname collisions, the kinds
// that serve hosts (Ingresses, the Gateway API's routes and ListenerSets,
// v1, and XListenerSets, v1alpha1); unsynced
// lists the counted resources it cannot map to a kind offline (custom
// resources).
func syncKinds(reg *registry.Snapshot) (sync []any, unsynced []string) {
	gvks := []schema.GroupVersionKind{{Version: "v1", Kind: "Namespace"}}
	if reg.HostnameCollisions() {
		for _, k := range clusterview.HostKinds() {
			gvks = append(gvks, schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind})
		}
	}
	for _, gr := range reg.QuotaResources() {
		gvk, ok := kindOf(gr)
		if !ok {
			unsynced = append(unsynced, gr.String())
			continue
		}
		if !slices.Contains(gvks, gvk) {
			gvks = append(gvks, gvk)
		}
	}
	for _, gvk := range gvks {
		sync = append(sync, map[string]any{"groups": []any{gvk.Group}, "versions": []any{gvk.Version}, "kinds": []any{gvk.Kind}})
	}
	return sync, unsynced
}

// kindOf maps a built-in resource to its kind at the group's preferred version.
func kindOf(gr schema.GroupResource) (schema.GroupVersionKind, bool) {
	for _, gv := range scheme.Scheme.PrioritizedVersionsForGroup(gr.Group) {
		for kind := range scheme.Scheme.KnownTypes(gv) {
			gvk := gv.WithKind(kind)
			if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural.Resource == gr.Resource {
				return gvk, true
			}
		}
	}
	return schema.GroupVersionKind{}, false
}
