package state

import (
	"slices"

	"github.com/tenantguard/tenantguard/internal/clusterview"
)

// Quotas reports every tenant-wide limit of the registry in force with the
// view's count against it (metrics.QuotaSource): each tenant's
// namespaceQuota as resource "namespaces" and its quotas by key, in tenant
// order. Nothing before a registry is in force.
func (s *Store) Quotas(yield func(tenant, resource string, used, limit int64)) {
	e := s.Engine()
	if e == nil {
		return
	}
	reg := e.Registry()
	for _, t := range reg.Registry().Tenants {
		if t.NamespaceQuota != nil {
			yield(t.Name, clusterview.NamespacesKey, int64(s.view.Count(t.Name, clusterview.NamespacesKey)), *t.NamespaceQuota)
		}
		keys := make([]string, 0, len(t.Quotas))
		for key := range t.Quotas {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		for _, key := range keys {
			yield(t.Name, key, int64(s.view.Count(t.Name, key)), t.Quotas[key])
		}
	}
}
