// Package registry reads, validates and compiles the tenant registry: the
// TenantRegistry document kept in the tenantguard-registry ConfigMap.
//
// Parse accepts the ConfigMap manifest or the bare document, rejects unknown
// fields, and reports every problem at once with its file:line. A registry that
// validates is compiled into an immutable Snapshot whose lookups (tenant by
// name, tenants by owner, tenant by namespace prefix) cost the same whatever
// the number of tenants, and whose Data is what the Rego rules read as
// data.tenantguard.registry.
package registry
