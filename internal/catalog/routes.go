package catalog

import (
	"cmp"
	"slices"
	"strings"
)

// AnyKind is the route key of the families that judge every kind: those
// with a rule that judges the counted resources, or every kind (All).
const AnyKind = "*"

// Data is data.tenantguard.catalog, what the library's entrypoints read:
// the routes, by kind key, to the families that can refuse ("validate") and
// mutate ("mutate") a request of that kind, each list sorted and holding
// the families of every kind too; and each rule's default enforcement.
func (c *Catalog) Data() map[string]any {
	enforcement := map[string]any{}
	for _, r := range c.rules {
		enforcement[r.ID] = r.Enforcement
	}
	return map[string]any{
		"routes": map[string]any{
			"validate": c.routes(func(*Rule) bool { return true }),
			"mutate":   c.routes(func(r *Rule) bool { return r.Mutates }),
		},
		"enforcement": enforcement,
	}
}

// routes maps each kind key to the families of the rules that pass keep.
func (c *Catalog) routes(keep func(*Rule) bool) map[string]any {
	byKind := map[string][]string{}
	var every []string
	for i := range c.rules {
		r := &c.rules[i]
		if !keep(r) {
			continue
		}
		if r.Counted || r.All {
			every = union(every, []string{r.Family})
		}
		for _, k := range r.Kinds {
			byKind[k.Key()] = union(byKind[k.Key()], []string{r.Family})
		}
	}
	out := map[string]any{}
	if len(every) > 0 {
		out[AnyKind] = sorted(every)
	}
	for key, families := range byKind {
		out[key] = sorted(union(families, every))
	}
	return out
}

func sorted(s []string) []any {
	s = slices.Clone(s)
	slices.Sort(s)
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// Route is one resource (or resource/subresource) the API server must send
// to a webhook, with the operations.
type Route struct {
	Group, Resource string
	Operations      []string
}

// Routes are what the API server must send to tenantguard's webhooks so
// that every rule sees what it declares: for the validating webhook
// (mutating false) every rule's kinds and subresources with its
// operations, for the mutating webhook those of the rules that mutate
// (DELETE left out: nothing is mutated on a deletion). Namespace routes,
// judged before a namespace belongs to a tenant, come apart from the
// others, which the webhooks send for tenant namespaces only. Resources
// come in the order of their groups, then as first declared. The resources
// the registry's quotas count are the registry's to add (RouteCounted).
func (c *Catalog) Routes(mutating bool) (namespaces, workloads []Route) {
	for i := range c.rules {
		for _, route := range c.rules[i].Routes(mutating) {
			into := &workloads
			if route.Group == "" && (route.Resource == "namespaces" || strings.HasPrefix(route.Resource, "namespaces/")) {
				into = &namespaces
			}
			add(into, route)
		}
	}
	for _, routes := range [][]Route{namespaces, workloads} {
		slices.SortStableFunc(routes, func(a, b Route) int { return cmp.Compare(a.Group, b.Group) })
		for i := range routes {
			routes[i].Operations = inOrder(routes[i].Operations)
		}
	}
	return namespaces, workloads
}

// Routes are what the API server must send to a webhook for the rule to see
// what it declares: its kinds' resources with its operations, and their
// subresources with updates (a subresource is neither created nor deleted
// on its own, ephemeral containers and status alike). For the mutating
// webhook (mutating true): nothing unless the rule mutates, and no DELETE.
// The resources the registry counts are the registry's to add.
func (r *Rule) Routes(mutating bool) []Route {
	if mutating && !r.Mutates {
		return nil
	}
	ops := r.Operations
	if mutating {
		ops = slices.DeleteFunc(slices.Clone(ops), func(op string) bool { return op == "DELETE" })
	}
	return r.RoutesFor(ops)
}

// RoutesFor are the rule's kinds' resources with the operations ops (those
// of them a kind narrows its operations to), and their subresources with
// updates when that leaves UPDATE: what a policy acting
// on those operations of the rule matches (the MutatingAdmissionPolicy of
// its CEL mutations, say).
func (r *Rule) RoutesFor(ops []string) []Route {
	var out []Route
	for _, k := range r.Kinds {
		kops := ops
		if k.Operations != nil {
			kops = slices.DeleteFunc(slices.Clone(ops), func(op string) bool { return !slices.Contains(k.Operations, op) })
		}
		add(&out, Route{Group: k.Group, Resource: k.Resource, Operations: kops})
		for _, sub := range k.Subresources {
			add(&out, Route{Group: k.Group, Resource: sub, Operations: subresourceOps(kops)})
		}
	}
	return out
}

// JudgesNamespaces reports whether the rule judges Namespace objects, which
// the webhooks send for every namespace (it may be becoming a tenant's);
// the others they send only from tenant namespaces.
func (r *Rule) JudgesNamespaces() bool {
	return slices.ContainsFunc(r.Kinds, func(k Kind) bool { return k.Group == "" && k.Kind == "Namespace" })
}

// EveryKind are the operations in which some rule judges every namespaced
// kind (kinds token All), which a catch-all webhook sends; nil when no
// rule does.
func (c *Catalog) EveryKind() []string {
	var ops []string
	for _, r := range c.rules {
		if r.All {
			ops = union(ops, r.Operations)
		}
	}
	return inOrder(ops)
}

// CountsAnything reports whether a rule judges the counted resources, so
// that the webhooks must send their creates.
func (c *Catalog) CountsAnything() bool {
	return slices.ContainsFunc(c.rules, func(r Rule) bool { return r.Counted })
}

// subresourceOps are the operations a subresource can see of ops: updates
// (a subresource is neither created nor deleted on its own, ephemeral
// containers and status alike).
func subresourceOps(ops []string) []string {
	if slices.Contains(ops, "UPDATE") {
		return []string{"UPDATE"}
	}
	return nil
}

// add merges a route into routes: one entry per resource.
func add(routes *[]Route, r Route) {
	if len(r.Operations) == 0 {
		return
	}
	i := slices.IndexFunc(*routes, func(o Route) bool { return o.Group == r.Group && o.Resource == r.Resource })
	if i < 0 {
		*routes = append(*routes, Route{Group: r.Group, Resource: r.Resource, Operations: slices.Clone(r.Operations)})
		return
	}
	(*routes)[i].Operations = union((*routes)[i].Operations, r.Operations)
}

// inOrder sorts operations as the API server lists them.
func inOrder(ops []string) []string {
	order := []string{"CREATE", "UPDATE", "DELETE", "CONNECT"}
	slices.SortFunc(ops, func(a, b string) int { return cmp.Compare(slices.Index(order, a), slices.Index(order, b)) })
	return ops
}
