package state

import (
	"maps"
	"slices"
	"strconv"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/usage"
)

// Limit is one tenant-wide limit in force and its use: objects for counts,
// the resource's scale for sums (usage.Amount: thousandths of a CPU, bytes).
type Limit struct {
	Tenant, Resource string
	Used, Hard       int64
	// Sum is set for a sum of resources (resourceQuota.hard), unset for a
	// count of objects (namespaceQuota, quotas).
	Sum bool
}

// Value is an amount of a limit in its resource's own unit: CPU in cores,
// the rest as counted.
func (l Limit) Value(n int64) float64 {
	if l.Sum && usage.Milli(l.Resource) {
		return float64(n) / 1000
	}
	return float64(n)
}

// Text is an amount of a limit as people read it (1500m, 2Gi, 12).
func (l Limit) Text(n int64) string {
	if l.Sum {
		return usage.Format(l.Resource, n)
	}
	return strconv.FormatInt(n, 10) // a count: 1000, never 1k
}

// Limits reports every tenant-wide limit of reg with view's use of it, in
// tenant order: each tenant's namespaceQuota as resource "namespaces", its
// quotas and its resourceQuota.hard, each by key.
func Limits(reg *registry.Snapshot, view *clusterview.View, yield func(Limit)) {
	for _, t := range reg.Registry().Tenants {
		if t.NamespaceQuota != nil {
			yield(Limit{Tenant: t.Name, Resource: clusterview.NamespacesKey, Used: int64(view.Count(t.Name, clusterview.NamespacesKey)), Hard: *t.NamespaceQuota})
		}
		for _, key := range slices.Sorted(maps.Keys(t.Quotas)) {
			yield(Limit{Tenant: t.Name, Resource: key, Used: int64(view.Count(t.Name, key)), Hard: t.Quotas[key]})
		}
		if t.ResourceQuota == nil {
			continue
		}
		for _, l := range t.ResourceQuota.Limits() {
			yield(Limit{Tenant: t.Name, Resource: l.Key, Used: view.Used(t.Name, l.Canonical), Hard: l.Amount, Sum: true})
		}
	}
}

// Quotas reports every tenant-wide limit of the registry in force with the
// view's use of it (metrics.QuotaSource), in the resources' own units
// (Limit.Value), as Limits. Nothing before a registry is in force.
func (s *Store) Quotas(yield func(tenant, resource string, used, limit float64)) {
	e := s.Engine()
	if e == nil {
		return
	}
	Limits(e.Registry(), s.view, func(l Limit) {
		yield(l.Tenant, l.Resource, l.Value(l.Used), l.Value(l.Hard))
	})
}
