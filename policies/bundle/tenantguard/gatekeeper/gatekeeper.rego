# METADATA
# title: Gatekeeper adapter
# description: |
#   What the ConstraintTemplates of `tenantguard export gatekeeper` call. In a
#   template the library is renamed under data.lib (Gatekeeper's rule for
#   libraries), the registry and tenantguard's own user names come from the
#   Constraint's parameters, and the cluster from Gatekeeper's replicated
#   inventory (data.inventory, filled by the exported SyncSet) plus
#   input.review.namespaceObject. The inventory is reshaped as kube-mgmt's
#   data.kubernetes so that the facts are built by the same rules as for the
#   OPA bundle.
package tenantguard.gatekeeper

import data.tenantguard.kubernetes
import data.tenantguard.lib.identity
import data.tenantguard.rules

_review := object.get(input, "review", {})

# Gatekeeper hands a DELETE's existing object in object too; the API server
# (and so the rules) send it only as oldObject
_request := object.union(_review, {"object": null}) if {
	_review.operation == "DELETE"
} else := _review

default _inventory := {}

_inventory := data.inventory

_cluster_kinds(group, kind) := {name: obj |
	some gv, kinds in object.get(_inventory, "cluster", {})
	_group_of(gv) == group
	some name, obj in object.get(kinds, kind, {})
}

_group_of(gv) := "" if not contains(gv, "/")

_group_of(gv) := split(gv, "/")[0] if contains(gv, "/")

_namespace_object := {input.review.namespaceObject.metadata.name: input.review.namespaceObject} if {
	is_object(input.review.namespaceObject)
} else := {}

# the objects of a kind, by namespace and name, as kube-mgmt replicates
# them under their resource name
_namespaced(group, kind) := {namespace: objects |
	some namespace, versions in object.get(_inventory, "namespace", {})
	objects := {name: obj |
		some gv, kinds in versions
		_group_of(gv) == group
		some name, obj in object.get(kinds, kind, {})
	}
}

_resource := object.get(_request, ["resource", "resource"], "")

# the kinds whose hosts a hostname collision is with, when the request is one
_host_resources := {
	"ingresses": ["networking.k8s.io", "Ingress"],
	"httproutes": ["gateway.networking.k8s.io", "HTTPRoute"],
	"grpcroutes": ["gateway.networking.k8s.io", "GRPCRoute"],
	"tlsroutes": ["gateway.networking.k8s.io", "TLSRoute"],
}

_hosts_cluster := {resource: _namespaced(k[0], k[1]) | some resource, k in _host_resources} if {
	some k in _host_resources
	k[0] == object.get(_request.kind, "group", "")
	k[1] == _request.kind.kind
} else := {}

_cluster := object.union_n([
	_hosts_cluster,
	{_resource: _namespaced(object.get(_request.kind, "group", ""), _request.kind.kind) | not _resource in {"", "namespaces", "priorityclasses"}},
	{
		"namespaces": object.union(
			object.remove(_cluster_kinds("", "Namespace"), object.keys(_namespace_object)),
			_namespace_object,
		),
		"priorityclasses": _cluster_kinds("scheduling.k8s.io", "PriorityClass"),
	},
])

_registry := object.get(input, ["parameters", "registry"], {})

_managers := {name: true | some name in object.get(input, ["parameters", "managers"], [])}

_facts := facts if {
	facts := kubernetes.policy_input with input as {"request": _request}
		with data.kubernetes as _cluster
		with data.tenantguard.registry as _registry
}

_rules := object.get(input, ["parameters", "rules"], [])

# METADATA
# description: |
#   The violations of one rule family ("namespaces", "pods", ...) whose rule
#   ids the Constraint names in parameters.rules, each "[rule-id] sentence".
violations(family) := _library(family) | _unlabelled(family)

_library(family) := {sprintf("[%s] %s", [v.id, v.msg]) |
	some v in rules[family].violations with input as _facts
		with data.tenantguard.registry as _registry
		with data.tenantguard.runtime.managers as _managers
	v.id in _rules
}

# tenantguard's mutating webhook labels a namespace an owner creates for
# their tenant; Gatekeeper validates only, so the label must be set, or the
# namespace would be outside every workload rule
_unlabelled("namespaces") := {msg |
	"namespace-ownership" in _rules
	_request.operation == "CREATE"
	label := _registry.settings.tenantLabel
	not _request.object.metadata.labels[label]
	tenant := rules.namespaces.target with input as _facts with data.tenantguard.registry as _registry
	owned := identity.owned_tenants with input as _facts with data.tenantguard.registry as _registry
	tenant in owned
	msg := sprintf("[namespace-ownership] namespace %q is for tenant %q and must say so: set the label \"%s: %s\" (no tenantguard webhook adds it here)", [_request.name, tenant, label, tenant])
}

_unlabelled(family) := set() if family != "namespaces"
