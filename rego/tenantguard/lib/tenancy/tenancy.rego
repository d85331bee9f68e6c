# METADATA
# title: Tenancy facts
# description: |
#   The tenant a request belongs to and the cluster facts the rules read: the
#   labels of the request's namespace and tenant-wide object counts. Both come
#   from input.cluster, which the caller fills from its view of the cluster.
package tenantguard.lib.tenancy

_registry := data.tenantguard.registry

# METADATA
# description: The registry settings.
settings := _registry.settings

# METADATA
# description: The namespace label that names a namespace's tenant.
tenant_label := settings.tenantLabel

# METADATA
# description: |
#   The request's kind as rules declare kinds: "Kind" for the core API
#   ("Pod"), "group/Kind" for other groups ("apps/Deployment").
kind_key := input.request.kind.kind if {
	object.get(input.request.kind, "group", "") == ""
} else := concat("/", [input.request.kind.group, input.request.kind.kind])

# METADATA
# description: |
#   A tenant's configuration. A tenant named by a namespace label but missing
#   from the registry gets the most restrictive defaults, never none.
config(name) := tenant if {
	tenant := _registry.tenants[name]
} else := object.union(_registry.defaultTenant, {"name": name})

# METADATA
# description: The tenant owning the namespace of a namespaced request.
namespace_tenant := tenant if {
	object.get(input.request, "namespace", "") != ""
	tenant := input.cluster.namespace.labels[tenant_label]
	tenant != ""
}

# METADATA
# description: The request targets an object inside a tenant namespace.
in_tenant_namespace if namespace_tenant

# METADATA
# description: The configuration of the tenant owning the request's namespace.
tenant := config(namespace_tenant)

# METADATA
# description: How many objects of a quota key (pods, count/deployments.apps, namespaces) a tenant has now.
count_of(name, key) := object.get(input.cluster, ["counts", name, key], 0)

# METADATA
# description: |
#   The tenant whose name followed by "-" is the longest prefix of a namespace
#   name. Cost grows with the name's length, not the number of tenants.
prefix_tenant(name) := tenant if {
	parts := split(name, "-")
	count(parts) > 1
	candidates := {candidate |
		some i in numbers.range(1, count(parts) - 1)
		candidate := concat("-", array.slice(parts, 0, i))
		_registry.tenants[candidate]
	}
	longest := max({count(c) | some c in candidates})
	some tenant in candidates
	count(tenant) == longest
}

# METADATA
# description: A name is allowed by a class policy ({allowed, allowedRegex}).
name_allowed(policy, name) if name in policy.allowed

name_allowed(policy, name) if {
	policy.allowedRegex != ""
	regex.match(policy.allowedRegex, name)
}

# METADATA
# description: What a class policy allows, for denial messages.
allowed_text(policy) := text if {
	names := [n | some n in policy.allowed]
	parts := array.concat(
		[concat(", ", names) | count(names) > 0],
		[sprintf("names matching %s", [policy.allowedRegex]) | policy.allowedRegex != ""],
	)
	count(parts) > 0
	text := concat(", or ", parts)
} else := "none"

# METADATA
# description: The object being written, or {} when the request has none (DELETE).
new_object := obj if {
	obj := input.request.object
	is_object(obj)
} else := {}

# METADATA
# description: The object as it was before the request, or {} (CREATE).
old_object := obj if {
	obj := input.request.oldObject
	is_object(obj)
} else := {}

# METADATA
# description: The request's object name, from the request or the object.
object_name := name if {
	name := input.request.name
	name != ""
} else := object.get(new_object, ["metadata", "name"], object.get(old_object, ["metadata", "name"], ""))

# METADATA
# description: |
#   The request's object as a denial names it: its kind and name (or the
#   prefix of the name the API server will generate), e.g. Deployment "web".
object_text := sprintf("%s %q", [input.request.kind.kind, object_name]) if {
	object_name != ""
} else := sprintf("%s %q", [input.request.kind.kind, concat("", [object.get(new_object, ["metadata", "generateName"], ""), "*"])])

# METADATA
# description: A string escaped as one token of a JSON pointer (RFC 6901), for patches.
pointer_token(s) := replace(replace(s, "~", "~0"), "/", "~1")
