package export

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tenantguard/tenantguard/internal/clusterview"

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

// Gatekeeper builds the Gatekeeper library for reg: a SyncSet replicating
// what the referential rules read, one ConstraintTemplate per rule family
// (Rego v1, the whole library renamed under data.lib as a template library,
// tenantguard.gatekeeper as the adapter) and one Constraint per rule that
// claims Gatekeeper, named after it and matching its kinds, with the
// registry's enforcement mode as its enforcementAction and the registry as
// its parameters.
func Gatekeeper(reg *registry.Snapshot, opts Options) (*Library, error) {
	cat, err := library(opts.Catalog)
	if err != nil {
		return nil, err
	}
	libs, err := gatekeeperLibs(cat)
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
	// one requirement per kind: each is needed, none stands in for another
	requirements := make([]any, len(sync))
	for i, gvk := range sync {
		requirements[i] = []any{gvk}
	}
	requires, err := json.Marshal(requirements)
	if err != nil {
		return nil, err
	}
	var rules []*catalog.Rule
	var families []string
	for i := range cat.Rules() {
		r := &cat.Rules()[i]
		if !r.Claims(catalog.EngineGatekeeper) {
			lib.Coverage[r.ID] = "not covered: the rule does not claim Gatekeeper"
			continue
		}
		rules = append(rules, r)
		if !slices.Contains(families, r.Family) {
			families = append(families, r.Family)
		}
	}
	for _, family := range families {
		lib.Objects = append(lib.Objects, constraintTemplate(family, libs, string(requires)))
	}
	for _, r := range rules {
		lib.Objects = append(lib.Objects, map[string]any{
			"apiVersion": "constraints.gatekeeper.sh/v1beta1",
			"kind":       gatekeeperKind(r.Family),
			"metadata":   map[string]any{"name": r.ID},
			"spec": map[string]any{
				"enforcementAction": mode(reg, r),
				"match":             gatekeeperMatch(r),
				"parameters": map[string]any{
					"rules":    []any{r.ID},
					"registry": data,
					"managers": managersOrDefault(opts.Managers),
				},
			},
		})
		lib.Coverage[r.ID] = covered + " (the rule library, as template " + gatekeeperKind(r.Family) + ")"
		if slices.Contains(r.Operations, "DELETE") {
			lib.Coverage[r.ID] += "; deletions only with Gatekeeper's enableDeleteOperations"
		}
		if r.Counted && len(unsynced) > 0 {
			lib.Coverage[r.ID] += "; add the kinds of " + strings.Join(unsynced, ", ") + " to the SyncSet, they are not built-in resources"
		}
	}
	return lib, nil
}

// gatekeeperKind is the Constraint kind of a rule family, e.g. TenantguardPods.
func gatekeeperKind(family string) string {
	return "Tenantguard" + strings.ToUpper(family[:1]) + family[1:]
}

// gatekeeperMatch is what a rule's Constraint matches: its kinds, or, for
// a rule judging the counted resources or every kind, every namespaced
// kind (a Namespace, whose requests carry its own name as namespace, is
// left to the rules that judge namespaces), and Namespaces too for a rule
// that judges every kind and Namespaces.
func gatekeeperMatch(r *catalog.Rule) map[string]any {
	every := map[string]any{"kinds": []any{map[string]any{"apiGroups": []any{"*"}, "kinds": []any{"*"}}}}
	switch {
	case r.All && r.JudgesNamespaces():
		return every
	case r.All || r.Counted:
		every["scope"] = "Namespaced"
		return every
	}
	groups, byGroup := groupKinds(r.Kinds, func(k catalog.Kind) []any { return []any{k.Kind} })
	kinds := make([]any, 0, len(groups))
	for _, g := range groups {
		kinds = append(kinds, map[string]any{"apiGroups": []any{g}, "kinds": byGroup[g]})
	}
	return map[string]any{"kinds": kinds}
}

func constraintTemplate(family string, libs []any, requires string) map[string]any {
	kind := gatekeeperKind(family)
	rego := fmt.Sprintf(`package tenantguard.%s

import data.lib.tenantguard.gatekeeper

violation contains {"msg": msg} if some msg in gatekeeper.violations(%q)
`, family, family)
	return map[string]any{
		"apiVersion": "templates.gatekeeper.sh/v1",
		"kind":       "ConstraintTemplate",
		"metadata": map[string]any{
			"name":        strings.ToLower(kind),
			"annotations": map[string]any{"metadata.gatekeeper.sh/requires-sync-data": requires},
		},
		"spec": map[string]any{
			"crd": map[string]any{"spec": map[string]any{
				"names": map[string]any{"kind": kind},
				"validation": map[string]any{
					"legacySchema": false,
					"openAPIV3Schema": map[string]any{
						"type": "object",
						"properties": map[string]any{
							"rules":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "the rule ids this Constraint enforces"},
							"managers": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "user names of tenantguard itself"},
							"registry": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true, "description": "the compiled tenant registry"},
						},
					},
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
	}
}

// gatekeeperLibs is the library (tests left out) with every package and
// reference under data.tenantguard moved under data.lib.tenantguard,
// comments dropped, in a stable order.
func gatekeeperLibs(cat *catalog.Catalog) ([]any, error) {
	modules := cat.Modules()
	paths := make([]string, 0, len(modules))
	for path := range modules {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	// Gatekeeper has no room for data of one's own (data.lib holds code
	// only): what the library reads as data, the adapter passes in the input
	moves := [][2]ast.Ref{
		{ast.MustParseRef("data." + Root + ".registry"), ast.MustParseRef("input." + Root + ".registry")},
		{ast.MustParseRef("data." + Root + ".runtime"), ast.MustParseRef("input." + Root + ".runtime")},
		{ast.MustParseRef("data." + Root + ".catalog"), ast.MustParseRef("input." + Root + ".catalog")},
		{ast.MustParseRef("data.kubernetes"), ast.MustParseRef("input." + Root + ".kubernetes")},
		{ast.MustParseRef("data." + Root), ast.MustParseRef("data." + gatekeeperLibRoot + "." + Root)},
	}
	libs := make([]any, 0, len(paths))
	for _, path := range paths {
		module, err := catalog.ParseModule(path, modules[path])
		if err != nil {
			return nil, err
		}
		move := func(ref ast.Ref) ast.Ref {
			for _, m := range moves {
				if ref.HasPrefix(m[0]) {
					return m[1].Concat(ref[len(m[0]):])
				}
			}
			return ref
		}
		rewritten, err := ast.TransformRefs(module, func(ref ast.Ref) (ast.Value, error) { return move(ref), nil })
		if err != nil {
			return nil, err
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
			return nil, fmt.Errorf("formatting %s for Gatekeeper: %w", path, err)
		}
		libs = append(libs, string(src))
	}
	return libs, nil
}

// syncKinds are the kinds the referential rules read from Gatekeeper's
// inventory: namespaces, priority classes, every counted resource of a
// built-in kind, and, when a tenant refuses hostname collisions, the kinds
// that serve hosts (Ingresses and the Gateway API's routes, v1); unsynced
// lists the counted resources it cannot map to a kind offline (custom
// resources).
func syncKinds(reg *registry.Snapshot) (sync []any, unsynced []string) {
	gvks := []schema.GroupVersionKind{
		{Version: "v1", Kind: "Namespace"},
		{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass"},
	}
	if reg.HostnameCollisions() {
		for _, k := range clusterview.HostKinds() {
			gvks = append(gvks, schema.GroupVersionKind{Group: k.Group, Version: "v1", Kind: k.Kind})
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
