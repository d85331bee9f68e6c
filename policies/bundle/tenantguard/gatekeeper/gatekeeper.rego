# METADATA
# title: Gatekeeper adapter
# description: |
#   What the ConstraintTemplates of `tenantguard export gatekeeper` call. In a
#   template the library is renamed under data.lib (Gatekeeper's rule for
#   libraries). The registry comes from the Constraint's parameters, pruned to
#   the parts the template's rules read (their METADATA's reads), and
#   tenantguard's own user names from parameters.managers. The cluster comes
#   from input.review.namespaceObject and, for what looks beyond the request's
#   namespace (tenant-wide counts, ownership, hostname collisions), from
#   Gatekeeper's replicated inventory (data.inventory, filled by the exported
#   SyncSet), read in place: a fact is built only when the parameters hold the
#   registry entry that makes a rule need it, so a template whose rules count
#   nothing never reads the inventory.
package tenantguard.gatekeeper

import data.tenantguard.lib.hosts
import data.tenantguard.lib.identity
import data.tenantguard.lib.tenancy
import data.tenantguard.lib.usage
import data.tenantguard.rules

_review := object.get(input, "review", {})

# Gatekeeper hands a DELETE's existing object in object too; the API server
# (and so the rules) send it only as oldObject
_request := object.union(_review, {"object": null}) if {
	_review.operation == "DELETE"
} else := _review

_parameters := object.get(input, "parameters", {})

_registry := object.get(_parameters, "registry", {})

_managers := {name: true | some name in object.get(_parameters, "managers", [])}

_rules := object.get(_parameters, "rules", [])

_label := _registry.settings.tenantLabel

_group := object.get(_request.kind, "group", "")

_group_of(gv) := "" if not contains(gv, "/")

_group_of(gv) := split(gv, "/")[0] if contains(gv, "/")

_is_namespace if {
	_group == ""
	_request.kind.kind == "Namespace"
}

_creating if {
	_request.operation == "CREATE"
	object.get(_request, "subResource", "") == ""
}

_namespace := _request.name if _is_namespace

_namespace := object.get(_request, "namespace", "") if not _is_namespace

# Gatekeeper's inventory is read by path, never whole: its store hands out
# a copy of what a reference reads, so reading data.inventory would copy
# every replicated object on every review. The namespaces Gatekeeper
# replicates, by name, are read whole only to find a tenant's.
default _inventory_namespaces := {}

_inventory_namespaces := data.inventory.cluster.v1.Namespace

# the request's namespace as Gatekeeper's webhook hands it, fresher than the
# inventory
_namespace_object := obj if {
	obj := _review.namespaceObject
	is_object(obj)
} else := {}

_namespace_object_name := object.get(_namespace_object, ["metadata", "name"], "")

_namespace_named(name) := _namespace_object if {
	name != ""
	name == _namespace_object_name
} else := data.inventory.cluster.v1.Namespace[name]

_labels(name) := object.get(_namespace_named(name), ["metadata", "labels"], {})

_namespace_facts := {"namespace": {"name": _namespace, "labels": _labels(_namespace)}} if {
	_namespace != ""
	_namespace_named(_namespace)
} else := {}

_tenant := _labels(_namespace)[_label]

_tenant_config(name) := config if {
	config := _registry.tenants[name]
} else := object.get(_registry, "defaultTenant", {})

# The namespaces of a tenant: one pass over the replicated namespaces, the
# review's own namespace object standing for its inventory copy. Gatekeeper
# has no index to find them by, so this is the one cost that grows with the
# cluster; what the pass compares is bound beforehand, since a rule read in
# the loop would be looked up for every namespace.
_namespaces_of(tenant) := names if {
	label := _label
	own := _namespace_object_name
	names := {name |
		some name, obj in _inventory_namespaces
		name != own
		obj.metadata.labels[label] == tenant
	} | {own | _namespace_object.metadata.labels[label] == tenant}
}

# the tenants a created namespace could be meant for: the requester's, the
# labelled and the prefixed one
_owned := owned if {
	owned := identity.owned_tenants with input as {"request": _request}
		with data.tenantguard.registry as _registry
}

_candidates contains tenant if some tenant in _owned

_candidates contains tenant if {
	tenant := _request.object.metadata.labels[_label]
	is_string(tenant)
}

_candidates contains tenant if {
	tenant := tenancy.prefix_tenant(_request.name) with data.tenantguard.registry as _registry
}

_quota_key := _request.resource.resource if {
	object.get(_request.resource, "group", "") == ""
} else := sprintf("count/%s.%s", [_request.resource.resource, _request.resource.group])

# ResourceQuota does not count finished pods nor those past the grace
# period of their deletion, nor does tenantguard's server (usage.charged)
_counts(_) if _request.kind.kind != "Pod"

_counts(obj) if {
	_request.kind.kind == "Pod"
	usage.charged(obj)
}

# the tenant's objects of the request's kind, read namespace by namespace
_objects_of(tenant) := count({[namespace, name] |
	some namespace in _namespaces_of(tenant)
	some gv, kinds in data.inventory.namespace[namespace]
	_group_of(gv) == _group
	some name, obj in object.get(kinds, _request.kind.kind, {})
	_counts(obj)
})

# counts only for a tenant whose parameters hold the limit they are for
_count_facts := {"counts": {tenant: {"namespaces": count(_namespaces_of(tenant))} |
	some tenant in _candidates
	object.get(_tenant_config(tenant), "namespaceQuota", null) != null
}} if {
	_is_namespace
	_creating
} else := {"counts": {_tenant: {_quota_key: _objects_of(_tenant)}}} if {
	not _is_namespace
	_creating
	_quota_key in object.keys(object.get(_tenant_config(_tenant), "quotas", {}))
} else := {}

# the tenant's pods or claims, read namespace by namespace
_tenant_objects([api_version, kind]) := [obj |
	some namespace in _namespaces_of(_tenant)
	some obj in object.get(data.inventory.namespace, [namespace, api_version, kind], {})
]

# the API version and kind of the objects a quota key sums
_summed(key) := _summed_kinds[usage.summed(usage.canonical(key))]

_summed_kinds := {
	"pods": ["v1", "Pod"],
	"persistentvolumeclaims": ["v1", "PersistentVolumeClaim"],
	"resourceclaims": ["resource.k8s.io/v1", "ResourceClaim"],
}

# the sums of a tenant whose parameters hold a resource quota, for a request
# that adds to them
_resource_facts := {"resources": usage.facts(
	added,
	{k: usage.total(k, _tenant_objects(_summed(k))) | some k, _ in added},
	hard,
	count(_namespaces_of(_tenant)),
)} if {
	usage.counted(_request)
	hard := object.get(_tenant_config(_tenant), ["resourceQuota", "hard"], {})
	added := usage.adds(_request, hard)
	count(added) > 0
} else := {}

# the kinds that serve hosts (hosts.served), by kind, and their group
_host_kinds := {k.kind: k.group | some k in hosts.kinds}

_is_self(kind, namespace, name) if {
	kind == _request.kind.kind
	_host_kinds[kind] == _group
	namespace == _request.namespace
	name == _request.name
}

# the objects serving a host, but the request's own, sorted as the server
# sorts them (namespace, name, kind)
_holders(host) := [holder |
	related := {[namespace, name, kind, group, served] |
		some namespace, _ in _inventory_namespaces
		some gv, kinds in data.inventory.namespace[namespace]
		some kind, group in _host_kinds
		_group_of(gv) == group
		some name, obj in object.get(kinds, kind, {})
		some served in hosts.served(kind, namespace, obj)
		hosts.related(host, _request.kind.kind, served, kind)
		not _is_self(kind, namespace, name)
	}
	some key in sort({[namespace, name, kind, group] | some [namespace, name, kind, group, _] in related})
	holder := object.union(
		{"group": key[3], "kind": key[2], "namespace": key[0], "name": key[1], "tenant": object.get(_labels(key[0]), _label, "")},
		{"host": via | via := hosts.via(host, {served | some [ns, n, k, g, served] in related; [ns, n, k, g] == key})},
	)
]

_host_facts := {"hosts": {host: holders |
	some host in hosts.served(_request.kind.kind, _request.namespace, _request.object)
	holders := _holders(host)
	count(holders) > 0
}} if {
	_request.operation in {"CREATE", "UPDATE"}
	object.get(_request, "subResource", "") == ""
	_host_kinds[_request.kind.kind] == _group
	object.get(_tenant_config(_tenant), ["ingress", "hostnameCollision"], "off") != "off"
} else := {}

_facts := {"request": _request, "cluster": object.union_n([_namespace_facts, _count_facts, _host_facts, _resource_facts])}

# METADATA
# description: |
#   The violations of one rule family ("namespaces", "pods", ...) whose rule
#   ids the Constraint names in parameters.rules, each as {"rule": id, "msg":
#   "[rule-id] sentence"}.
violations(family) := _library(family) | _unlabelled(family)

_library(family) := {{"rule": v.id, "msg": sprintf("[%s] %s", [v.id, v.msg])} |
	some v in rules[family].violations with input as _facts
		with data.tenantguard.registry as _registry
		with data.tenantguard.runtime.managers as _managers
	v.id in _rules
}

# tenantguard's mutating webhook labels a namespace an owner creates for
# their tenant; Gatekeeper validates only, so the label must be set, or the
# namespace would be outside every workload rule
_unlabelled("namespaces") := {{"rule": "namespace-ownership", "msg": msg} |
	"namespace-ownership" in _rules
	_request.operation == "CREATE"
	not _request.object.metadata.labels[_label]
	tenant := rules.namespaces.target with input as _facts with data.tenantguard.registry as _registry
	tenant in _owned
	msg := sprintf("[namespace-ownership] namespace %q is for tenant %q and must say so: set the label \"%s: %s\" (no tenantguard webhook adds it here)", [_request.name, tenant, _label, tenant])
}

_unlabelled(family) := set() if family != "namespaces"
