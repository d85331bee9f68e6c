# METADATA
# title: Tenant-wide object counts
# description: |
#   tenant-quota: creating an object is refused when its tenant already has as
#   many objects of that resource, summed over all of its namespaces, as the
#   tenant's quotas allow. Keys are ResourceQuota object-count names: "pods" for
#   the core API, "count/deployments.apps" for other groups.
package tenantguard.rules.quota

import data.tenantguard.lib.tenancy

# METADATA
# description: The quota key of the request's resource.
key := input.request.resource.resource if {
	object.get(input.request.resource, "group", "") == ""
} else := sprintf("count/%s.%s", [input.request.resource.resource, input.request.resource.group])

# METADATA
# title: Tenant-wide object counts
# description: |
#   Creating an object is refused when the tenant's objects of that resource,
#   summed over all of its namespaces, already reach quotas[KEY].
# custom:
#   id: tenant-quota
#   reads: [registry.tenants.quotas]
#   kinds: [counted]
#   operations: [CREATE]
#   engines: [opa, gatekeeper]
#   notExpressible: counting a tenant's objects across its namespaces needs the other objects, and an admission policy sees only the request's object
violations contains {"id": "tenant-quota", "msg": msg} if {
	input.request.operation == "CREATE"
	object.get(input.request, "subResource", "") == ""
	tenancy.in_tenant_namespace
	limit := tenancy.tenant.quotas[key]
	used := tenancy.count_of(tenancy.namespace_tenant, key)
	used + 1 > limit
	msg := sprintf("tenant %q already has %d of its %d allowed %s across its namespaces; delete some first or ask for a higher quota", [tenancy.namespace_tenant, used, limit, key])
}
