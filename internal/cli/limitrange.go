package cli

import (
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// limitRangeDefaults fills a created pod's containers as the API server
// does before any webhook sees them, in a namespace of a tenant whose
// companions include a LimitRange (which the generator keeps in every
// namespace of the tenant): a request left out takes the container's own
// limit (the API server's defaulting), then the LimitRange's Container
// defaultRequest (or default), and a limit left out its default
// (LimitRanger). review -f then judges the pod the cluster would store: a
// manifest that names no resources is not refused for a quota the
// LimitRange satisfies.
func limitRangeDefaults(reg *registry.Snapshot, view *clusterview.View, namespace string, obj map[string]any) {
	if kind, _ := obj["kind"].(string); kind != "Pod" || obj["apiVersion"] != "v1" {
		return
	}
	name, ok := "", false
	if labels, seen := view.NamespaceLabels(namespace); seen {
		name = labels.Get(reg.TenantLabel())
	} else {
		name, ok = reg.PrefixTenant(namespace)
		if !ok {
			return
		}
	}
	tenant, ok := reg.Tenant(name)
	if !ok || tenant.Companions.LimitRange == nil {
		return
	}
	var item *registry.LimitRangeItem
	for i := range tenant.Companions.LimitRange.Limits {
		if tenant.Companions.LimitRange.Limits[i].Type == "Container" {
			item = &tenant.Companions.LimitRange.Limits[i]
		}
	}
	spec, _ := obj["spec"].(map[string]any)
	if item == nil || spec == nil {
		return
	}
	for _, field := range []string{"initContainers", "containers"} {
		containers, _ := spec[field].([]any)
		for _, c := range containers {
			if container, ok := c.(map[string]any); ok {
				defaultContainer(container, item)
			}
		}
	}
}

func defaultContainer(c map[string]any, item *registry.LimitRangeItem) {
	resources := child(c, "resources")
	requests, limits := child(resources, "requests"), child(resources, "limits")
	for name, q := range limits {
		if _, ok := requests[name]; !ok {
			requests[name] = q
		}
	}
	for name, q := range item.DefaultRequest {
		if _, ok := requests[name]; !ok {
			requests[name] = q
		}
	}
	for name, q := range item.Default {
		if _, ok := limits[name]; !ok {
			limits[name] = q
		}
		if _, ok := requests[name]; !ok {
			requests[name] = q
		}
	}
}

// child is m[key] as a map, made when absent.
func child(m map[string]any, key string) map[string]any {
	out, ok := m[key].(map[string]any)
	if !ok {
		out = map[string]any{}
		m[key] = out
	}
	return out
}
