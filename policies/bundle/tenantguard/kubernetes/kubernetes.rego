# METADATA
# title: OPA admission adapter (kube-mgmt)
# description: |
#   Entrypoints for OPA serving the API server itself: `opa run --server` with
#   the bundle of `tenantguard export bundle`, the API server's mutating
#   webhook posting to /v0/data/tenantguard/kubernetes/mutate and its
#   validating webhook to /v0/data/tenantguard/kubernetes/validate, and
#   kube-mgmt replicating the cluster into data.kubernetes: namespaces and
#   priorityclasses by name, namespaced resources by namespace and name
#   (data.kubernetes.pods[NAMESPACE][NAME]; ingresses, httproutes, grpcroutes
#   and tlsroutes for hostname collisions). Input: the AdmissionReview the
#   API server sends. The cluster facts are those tenantguard's server builds
#   from its informers, so the decisions are the same.
package tenantguard.kubernetes

import data.tenantguard.lib.identity
import data.tenantguard.lib.tenancy
import data.tenantguard.main

default _cluster := {}

_cluster := data.kubernetes

_registry := data.tenantguard.registry

_request := input.request

_is_namespace if {
	object.get(_request.kind, "group", "") == ""
	_request.kind.kind == "Namespace"
}

_creating if {
	_request.operation == "CREATE"
	object.get(_request, "subResource", "") == ""
}

_namespace := _request.name if _is_namespace

_namespace := object.get(_request, "namespace", "") if not _is_namespace

_exists(name) if _cluster.namespaces[name]

_labels(name) := object.get(_cluster.namespaces[name], ["metadata", "labels"], {})

_namespace_facts := {"namespace": {"name": _namespace, "labels": _labels(_namespace)}} if {
	_namespace != ""
	_exists(_namespace)
} else := {}

_tenant := _labels(_namespace)[tenancy.tenant_label] if _exists(_namespace)

# the tenants a created namespace could be meant for: the requester's, the
# labelled and the prefixed one
_candidates contains tenant if some tenant in identity.owned_tenants

_candidates contains tenant if {
	tenant := _request.object.metadata.labels[tenancy.tenant_label]
	is_string(tenant)
}

_candidates contains tenant if tenant := tenancy.prefix_tenant(_request.name)

_namespaces_of(tenant) := count([name |
	some name, _ in _cluster.namespaces
	_labels(name)[tenancy.tenant_label] == tenant
])

_quota_key := _request.resource.resource if {
	object.get(_request.resource, "group", "") == ""
} else := sprintf("count/%s.%s", [_request.resource.resource, _request.resource.group])

# ResourceQuota does not count finished pods, nor does tenantguard's server
_finished(obj) if obj.status.phase in {"Succeeded", "Failed"}

_objects_of(tenant, resource) := count([name |
	some namespace, objects in object.get(_cluster, resource, {})
	_labels(namespace)[tenancy.tenant_label] == tenant
	some name, obj in objects
	not _finished(obj)
])

_count_facts := {"counts": {tenant: {"namespaces": _namespaces_of(tenant)} | some tenant in _candidates}} if {
	_is_namespace
	_creating
} else := {"counts": {_tenant: {_quota_key: _objects_of(_tenant, _request.resource.resource)}}} if {
	not _is_namespace
	_creating
	_quota_key in object.keys(_registry.tenants[_tenant].quotas)
} else := {}

_priority_facts := {"priorityClasses": {name: object.union(
	{"priority": class.value},
	{"preemptionPolicy": policy | policy := class.preemptionPolicy; policy != ""},
)}} if {
	not _is_namespace
	_creating
	object.get(_request.kind, "group", "") == ""
	_request.kind.kind == "Pod"
	name := _registry.tenants[_tenant].priorityClasses.default
	name != ""
	class := _cluster.priorityclasses[name]
} else := {}

# the kinds that serve hosts, by the resource kube-mgmt replicates them
# under, and where they keep their hosts; a Gateway binds hosts and serves none
_host_kinds := {
	"ingresses": {"group": "networking.k8s.io", "kind": "Ingress"},
	"httproutes": {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"},
	"grpcroutes": {"group": "gateway.networking.k8s.io", "kind": "GRPCRoute"},
	"tlsroutes": {"group": "gateway.networking.k8s.io", "kind": "TLSRoute"},
}

_served_hosts("Ingress", obj) := {lower(host) |
	some host in array.concat(
		[rule.host | some rule in object.get(obj, ["spec", "rules"], []); is_string(rule.host)],
		[host | some tls in object.get(obj, ["spec", "tls"], []); some host in object.get(tls, "hosts", [])],
	)
	host != ""
}

_served_hosts(kind, obj) := {lower(host) |
	some host in object.get(obj, ["spec", "hostnames"], [])
	host != ""
} if kind != "Ingress"

_serves_hosts if {
	some k in _host_kinds
	k.group == object.get(_request.kind, "group", "")
	k.kind == _request.kind.kind
}

_tenant_of(namespace) := object.get(object.get(_cluster, ["namespaces", namespace, "metadata", "labels"], {}), tenancy.tenant_label, "")

# the objects serving a host, but the request's own, sorted as the server
# sorts them (namespace, name, kind)
_holders(host) := [holder |
	some entry in sort([[namespace, name, k.kind, k.group] |
		some resource, k in _host_kinds
		some namespace, objects in object.get(_cluster, resource, {})
		some name, obj in objects
		host in _served_hosts(k.kind, obj)
		not _is_self(k, namespace, name)
	])
	holder := {"group": entry[3], "kind": entry[2], "namespace": entry[0], "name": entry[1], "tenant": _tenant_of(entry[0])}
]

_is_self(k, namespace, name) if {
	k.group == object.get(_request.kind, "group", "")
	k.kind == _request.kind.kind
	namespace == _request.namespace
	name == _request.name
}

_host_facts := {"hosts": {host: holders |
	some host in _served_hosts(_request.kind.kind, _request.object)
	holders := _holders(host)
	count(holders) > 0
}} if {
	_request.operation in {"CREATE", "UPDATE"}
	object.get(_request, "subResource", "") == ""
	_serves_hosts
	object.get(_registry.tenants[_tenant], ["ingress", "hostnameCollision"], "off") != "off"
} else := {}

_facts := object.union_n([_namespace_facts, _count_facts, _priority_facts, _host_facts])

# METADATA
# description: The input tenantguard's entrypoints read, built from the AdmissionReview and data.kubernetes.
policy_input := {"request": _request, "cluster": _facts}

_messages(violations) := sort([sprintf("[%s] %s", [v.id, v.msg]) | some v in violations])

# METADATA
# entrypoint: true
# description: The mutating webhook's AdmissionReview answer; it never denies.
mutate := {
	"apiVersion": "admission.k8s.io/v1",
	"kind": "AdmissionReview",
	"response": object.union({"uid": _request.uid, "allowed": true}, _patch),
}

_patch := {"patchType": "JSONPatch", "patch": base64.encode(json.marshal(operations))} if {
	operations := main.mutations with input as policy_input
	count(operations) > 0
} else := {}

# METADATA
# entrypoint: true
# description: |
#   The validating webhook's AdmissionReview answer: denials as the status
#   message (one "[rule-id] sentence" per line), warn-mode violations as
#   warnings, dryrun ones as audit annotations, as tenantguard's server answers.
validate := {
	"apiVersion": "admission.k8s.io/v1",
	"kind": "AdmissionReview",
	"response": object.union_n([
		{"uid": _request.uid, "allowed": _decision.allowed},
		_status,
		_warnings,
		_audit,
	]),
}

_decision := decision if {
	decision := main.decision with input as policy_input
}

_status := {"status": {
	"status": "Failure",
	"code": 403,
	"reason": "Forbidden",
	"message": concat("\n", _messages(_decision.deny)),
}} if not _decision.allowed

else := {}

_warnings := {"warnings": _messages(_decision.warn)} if count(_decision.warn) > 0

else := {}

_audit := {"auditAnnotations": {sprintf("dryrun-%s", [v.id]): sprintf("[%s] %s", [v.id, v.msg]) | some v in _decision.dryrun}} if {
	count(_decision.dryrun) > 0
} else := {}
