# METADATA
# title: Tenant-wide resource quotas
# description: |
#   tenant-resource-quota: ResourceQuota's hard limits summed over all of a
#   tenant's namespaces (resourceQuota.hard). A pod or claim (a
#   PersistentVolumeClaim or a ResourceClaim) created, a pod
#   resized or a claim expanded is refused when what it adds would take its
#   tenant's sum over the limit; the sums, the room left and what the
#   request adds are cluster facts (input.cluster.resources, integers:
#   thousandths of a CPU, bytes, objects, given for the keys the request
#   would take over their limit only), computed as the API server's quota
#   evaluators compute a pod's and a claim's usage. A pod created with
#   a container that names no request (or, for limits.*, no limit) of CPU or
#   memory under a limited key is refused, as ResourceQuota refuses it,
#   unless it sets resources at pod level.
package tenantguard.rules.resources

import data.tenantguard.lib.tenancy

_hard := object.get(tenancy.tenant, ["resourceQuota", "hard"], {})

_facts := object.get(input, ["cluster", "resources"], {})

# METADATA
# title: Tenant-wide resource quotas
# description: |
#   A pod or claim created, a pod resized or a claim expanded is refused when
#   its tenant's sum of a resource over all of its namespaces, with what the
#   request adds, would exceed resourceQuota.hard; and a pod whose
#   containers leave a limited CPU or memory request unnamed, when it sets
#   no resources at pod level.
# custom:
#   id: tenant-resource-quota
#   kinds: [Pod, PersistentVolumeClaim, {kind: resource.k8s.io/ResourceClaim, operations: [CREATE]}]
#   subresources: [pods/resize]
#   operations: [CREATE, UPDATE]
#   engines: [opa, gatekeeper]
#   reads: [registry.tenants.resourceQuota]
#   notExpressible: summing a tenant's resources across its namespaces needs the other objects, and an admission policy sees only the request's object
violations contains {"id": "tenant-resource-quota", "msg": msg} if {
	tenancy.in_tenant_namespace
	some key, adds in object.get(_facts, "adds", {})
	_hard[key]
	adds > _facts.room[key]
	used := _facts.used[key]
	msg := sprintf("tenant %q would use %s %s of its %s; %s %s and %s is in use across %s; %s", [
		tenancy.namespace_tenant, key, quantity(key, used + adds), _hard[key],
		tenancy.object_text, _asks(quantity(key, adds)), quantity(key, used), _namespaces(object.get(_facts, "namespaces", 0)),
		_room(key, _facts.room[key]),
	])
}

_namespaces(1) := "1 namespace"

_namespaces(n) := sprintf("%d namespaces", [n]) if n != 1

_asks(amount) := sprintf("asks for %s more", [amount]) if input.request.operation == "UPDATE"

_asks(amount) := sprintf("asks for %s", [amount]) if input.request.operation == "CREATE"

_room(key, left) := sprintf("it may ask for at most %s, or the tenant's quota must be raised", [quantity(key, left)]) if left > 0

_room(_, left) := "nothing is left: free some or ask for a higher quota" if left <= 0

violations contains {"id": "tenant-resource-quota", "msg": msg} if {
	tenancy.in_tenant_namespace
	input.request.operation == "CREATE"
	object.get(input.request, "subResource", "") == ""
	tenancy.kind_key == "Pod"
	not _pod_level
	some key in _unnamed_keys
	resource := _must_name[key]
	unnamed := sort({c.name | some c in _containers; not _names(c, key, resource)})
	msg := sprintf("%s must name %s for its containers %s: tenant %q has a quota on %s, which counts only what containers name; set resources.%s in each", [
		tenancy.object_text, key, concat(", ", [sprintf("%q", [n]) | some n in unnamed]),
		tenancy.namespace_tenant, key, _field(key, resource),
	])
}

# A pod that sets CPU, memory or hugepages at pod level (spec.resources,
# PodLevelResources, on by default since Kubernetes 1.34) need not name
# them in each container: ResourceQuota's check passes such a pod over
# (resourcehelper.IsPodLevelResourcesSet), and its usage is the pod's.
_pod_level if {
	some side in ["requests", "limits"]
	some resource, _ in object.get(tenancy.new_object, ["spec", "resources", side], {})
	_pod_level_resource(resource)
}

_pod_level_resource(resource) if resource in {"cpu", "memory"}

_pod_level_resource(resource) if startswith(resource, "hugepages-")

_containers := array.concat(
	object.get(tenancy.new_object, ["spec", "initContainers"], []),
	object.get(tenancy.new_object, ["spec", "containers"], []),
)

# the limited keys some container names no value for; a container that
# names both requests and limits of CPU and memory names every key, and
# is passed over at once
_unnamed_keys contains key if {
	some c in _containers
	not _names_all(c)
	some key, _ in _hard
	resource := _must_name[key]
	not _names(c, key, resource)
}

_names_all(c) if {
	c.resources.requests.cpu
	c.resources.requests.memory
	c.resources.limits.cpu
	c.resources.limits.memory
}

# The keys for which every container must name a value, as ResourceQuota
# requires for CPU and memory, with the resource they name.
_must_name := {
	"cpu": "cpu", "requests.cpu": "cpu", "limits.cpu": "cpu",
	"memory": "memory", "requests.memory": "memory", "limits.memory": "memory",
}

# A container names a limit for limits.*; a request or a limit (which the
# API server copies into the request) for the others.
_names(c, key, resource) if {
	startswith(key, "limits.")
	c.resources.limits[resource]
}

_names(c, key, resource) if {
	not startswith(key, "limits.")
	some kind in ["requests", "limits"]
	c.resources[kind][resource]
}

_field(key, resource) := sprintf("limits.%s", [resource]) if startswith(key, "limits.")

_field(key, resource) := sprintf("requests.%s", [resource]) if not startswith(key, "limits.")

# METADATA
# description: |
#   An amount of a quota resource (thousandths for CPU) as people read it:
#   CPU in cores or millicores (2, 1500m), bytes in the largest binary unit
#   dividing them (512Mi, 2Gi), anything else as a number.
quantity(key, n) := _cpu(n) if _is_cpu(key)

quantity(key, n) := _bytes(n) if {
	not _is_cpu(key)
	_is_bytes(key)
}

quantity(key, n) := sprintf("%v", [n]) if {
	not _is_cpu(key)
	not _is_bytes(key)
}

_is_cpu(key) if key == "cpu"

_is_cpu(key) if endswith(key, ".cpu")

_is_bytes(key) if endswith(key, "memory")

_is_bytes(key) if endswith(key, "storage")

_is_bytes(key) if contains(key, "hugepages-")

_cpu(milli) := sprintf("%d", [milli / 1000]) if milli % 1000 == 0

_cpu(milli) := sprintf("%dm", [milli]) if milli % 1000 != 0

_units := [["Ti", 1099511627776], ["Gi", 1073741824], ["Mi", 1048576], ["Ki", 1024]]

_bytes(n) := sprintf("%d%s", [n / unit, suffix]) if {
	n != 0
	divisors := [i | some i, [_, size] in _units; n % size == 0]
	count(divisors) > 0
	[suffix, unit] := _units[min(divisors)]
} else := sprintf("%d", [n])
