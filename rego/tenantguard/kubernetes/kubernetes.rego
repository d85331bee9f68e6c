# METADATA
# title: OPA admission adapter (kube-mgmt)
# description: |
#   Entrypoints for OPA serving the API server itself: `opa run --server` with
#   the bundle of `tenantguard export bundle`, the API server's mutating
#   webhook posting to /v0/data/tenantguard/kubernetes/mutate and its
#   validating webhook to /v0/data/tenantguard/kubernetes/validate, and
#   kube-mgmt replicating the cluster into data.kubernetes: namespaces and
#   priorityclasses by name, namespaced resources by namespace and name
#   (data.kubernetes.pods[NAMESPACE][NAME]; persistentvolumeclaims for
#   resource quotas; ingresses, httproutes, grpcroutes and tlsroutes for
#   hostname collisions). Input: the AdmissionReview the
#   API server sends. The cluster facts are those tenantguard's server builds
#   from its informers, so the decisions are the same.
package tenantguard.kubernetes

import data.tenantguard.lib.hosts
import data.tenantguard.lib.identity
import data.tenantguard.lib.tenancy
import data.tenantguard.lib.usage
import data.tenantguard.main

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

# Every read of data.kubernetes below names its path down to one object, or
# to one namespace's objects of a resource, but for the tenant-wide counts
# and the hostname collisions, which read every namespace or every Ingress
# and route: a rule of data.kubernetes as a whole would have OPA read (and,
# without --optimize-store-for-read-speed, convert) the whole replicated
# cluster for every request. (A collection is bound to a variable before
# `some ... in` iterates it: the Gatekeeper export moves data.kubernetes
# references, and does not see those written in a `some ... in`.)
_labels(name) := object.get(data.kubernetes.namespaces[name], ["metadata", "labels"], {})

_namespace_facts := {"namespace": {"name": _namespace, "labels": _labels(_namespace)}} if {
	_namespace != ""
} else := {}

_tenant := _labels(_namespace)[tenancy.tenant_label]

_tenant_config := tenancy.config(_tenant)

# METADATA
# description: |
#   How many objects of a quota key ("pods", "count/deployments.apps",
#   "namespaces") a tenant has in data.kubernetes, as tenantguard's server
#   counts them. The entrypoints put it in place of tenancy.count_of while
#   the rules decide, so that a count is made only when a rule asks for one
#   (tenant-quota, for a created object of a resource its tenant has a quota
#   for; namespace-quota, for a created namespace whose tenant has a
#   namespaceQuota), and only for the tenant it asks about: every other
#   request reads its own namespace, and no other.
count_of(tenant, "namespaces") := count(_namespaces_of(tenant))

count_of(tenant, key) := n if {
	key != "namespaces"
	resource := _resource_of(key)
	n := sum([_in_namespace(resource, namespace) | some namespace in _holding(tenant, resource)])
}

# The namespaces labelled for a tenant: the one scan of the replicated
# namespaces a count makes. kube-mgmt keeps them by name only, so that
# finding a tenant's namespaces reads every namespace's labels.
_namespaces_of(tenant) := names if {
	label := tenancy.tenant_label
	replicated := data.kubernetes.namespaces
	names := {name | some name, namespace in replicated; namespace.metadata.labels[label] == tenant}
} else := set()

# The tenant's namespaces that may hold objects of a resource, found by
# scanning the smaller of the two maps: the namespaces that hold (or held)
# objects of the resource, kube-mgmt's map of the resource, checking the
# tenant label of each, or every namespace. A resource that
# few namespaces use (claims, say) is counted without reading every
# namespace; pods, which nearly every namespace holds, scan the namespaces.
_holding(tenant, resource) := set() if {
	not data.kubernetes[resource]
} else := {namespace |
	some namespace, _ in holders
	data.kubernetes.namespaces[namespace].metadata.labels[label] == tenant
} if {
	holders := data.kubernetes[resource]
	count(holders) < count(data.kubernetes.namespaces)
	label := tenancy.tenant_label
} else := _namespaces_of(tenant)

# the resource kube-mgmt replicates a quota key's objects under: pods for
# "pods", deployments for "count/deployments.apps"
_resource_of(key) := split(trim_prefix(key, "count/"), ".")[0]

# A namespace's objects are counted with count() on their map, but pods:
# ResourceQuota does not count finished pods nor those past the grace
# period of their deletion, nor does tenantguard's server, and kube-mgmt
# replicates them all, so that the ones that count are found by reading the
# tenant's pods one by one (usage.charged).
_in_namespace("pods", namespace) := count([name |
	some name, pod in pods
	usage.charged(pod)
]) if {
	pods := data.kubernetes.pods[namespace]
}

_in_namespace(resource, namespace) := count(data.kubernetes[resource][namespace]) if resource != "pods"

_priority_facts := {"priorityClasses": {name: object.union(
	{"priority": class.value},
	{"preemptionPolicy": policy | policy := class.preemptionPolicy; policy != ""},
)}} if {
	not _is_namespace
	_creating
	object.get(_request.kind, "group", "") == ""
	_request.kind.kind == "Pod"
	name := _tenant_config.priorityClasses.default
	name != ""
	class := data.kubernetes.priorityclasses[name]
} else := {}

_serves_hosts if hosts.kinds[tenancy.kind_key]

_is_self(k, namespace, name) if {
	k.group == object.get(_request.kind, "group", "")
	k.kind == _request.kind.kind
	namespace == _request.namespace
	name == _request.name
}

_request_hosts := hosts.served(_request.kind.kind, _request.namespace, _request.object)

# The replicated objects serving a host that collides with one of the
# request's (hosts.related: the same, or a wildcard and a name under it), but
# the request's own, as [namespace, name, kind, group, host, served]: one
# pass over every Ingress and route, whatever the number of hosts asked
# about.
_serving contains [namespace, name, k.kind, k.group, host, served] if {
	some k in hosts.kinds
	replicated := data.kubernetes[k.resource]
	some namespace, objects in replicated
	some name, obj in objects
	some served in hosts.served(k.kind, namespace, obj)
	some host in _request_hosts
	hosts.related(host, _request.kind.kind, served, k.kind)
	not _is_self(k, namespace, name)
}

_tenant_of(namespace) := object.get(_labels(namespace), tenancy.tenant_label, "") if {
	data.kubernetes.namespaces[namespace]
} else := ""

# the holders of a host, sorted as the server sorts them (namespace, name,
# kind)
_holders(host) := [_holder(key, host) |
	some key in sort({[namespace, name, kind, group] | some [namespace, name, kind, group, h, _] in _serving; h == host})
]

# A holder, with the host it serves when not the one asked about: none when
# it serves that one, else the first in order of those related to it (as
# the server names it).
_holder(key, host) := object.union(
	{"group": key[3], "kind": key[2], "namespace": key[0], "name": key[1], "tenant": _tenant_of(key[0])},
	{"host": via | via := hosts.via(host, {served | some [ns, n, k, g, h, served] in _serving; [ns, n, k, g] == key; h == host})},
)

_host_facts := {"hosts": {host: _holders(host) | some [_, _, _, _, host, _] in _serving}} if {
	_serves_hosts
	_request.operation in {"CREATE", "UPDATE"}
	object.get(_request, "subResource", "") == ""
	object.get(_tenant_config, ["ingress", "hostnameCollision"], "off") != "off"
} else := {}

# The tenant's replicated pods or claims, namespace by namespace.
_tenant_objects(resource) := [obj |
	replicated := data.kubernetes[resource]
	some namespace in _holding(_tenant, resource)
	objects := replicated[namespace]
	some obj in objects
]

_summed(key) := usage.summed(usage.canonical(key))

# The sums of a tenant with a resource quota, for a request that adds to
# them (a pod or claim created, a pod resized, a claim expanded), by the
# keys it would take over their limit (none: {}): the one request kind that
# reads the tenant's pods (or claims) one by one, as tenantguard's server
# would sum them.
_resource_facts := {"resources": usage.facts(
	added,
	{k: usage.total(k, _tenant_objects(_summed(k))) | some k, _ in added},
	hard,
	count(_namespaces_of(_tenant)),
)} if {
	usage.counted(_request)
	hard := object.get(_tenant_config, ["resourceQuota", "hard"], {})
	added := usage.adds(_request, hard)
	count(added) > 0
} else := {}

_facts := object.union_n([_namespace_facts, _priority_facts, _host_facts, _resource_facts])

# the tenants a created namespace could be meant for: the requester's, the
# labelled and the prefixed one
_candidates contains tenant if some tenant in identity.owned_tenants

_candidates contains tenant if {
	tenant := _request.object.metadata.labels[tenancy.tenant_label]
	is_string(tenant)
}

_candidates contains tenant if tenant := tenancy.prefix_tenant(_request.name)

_quota_key := _request.resource.resource if {
	object.get(_request.resource, "group", "") == ""
} else := sprintf("count/%s.%s", [_request.resource.resource, _request.resource.group])

_count_facts := {"counts": {tenant: {"namespaces": count_of(tenant, "namespaces")} | some tenant in _candidates}} if {
	_is_namespace
	_creating
} else := {"counts": {_tenant: {_quota_key: count_of(_tenant, _quota_key)}}} if {
	not _is_namespace
	_creating
	_quota_key in object.keys(_tenant_config.quotas)
} else := {}

# METADATA
# description: |
#   The input tenantguard's rules read, built from the AdmissionReview and
#   data.kubernetes, tenant-wide counts included: those tenantguard's server
#   would give for the request (every candidate tenant's namespaces for a
#   created namespace, the tenant's objects of a created object's resource
#   when its tenant has a quota for it). The entrypoints below do not read
#   it: they give the rules the same input without the counts, and count
#   when a rule asks (count_of).
policy_input := {"request": _request, "cluster": object.union(_facts, _count_facts)}

# what the entrypoints give the rules
_input := {"request": _request, "cluster": _facts}

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
	operations := main.mutations with input as _input with tenancy.count_of as count_of
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

_decision := _unreplicated if {
	_unknown_namespace
} else := decision if {
	decision := main.decision with input as _input with tenancy.count_of as count_of
}

# A request in a namespace kube-mgmt has not replicated (yet: a namespace
# and its first objects applied together) cannot be decided: without the
# namespace's labels its tenant is unknown, and its tenant's rules would let
# through what they refuse. tenantguard's server refuses it the same way,
# for the client to retry.
_unknown_namespace if {
	not _is_namespace
	_namespace != ""
	not data.kubernetes.namespaces[_namespace]
}

_unreplicated := {
	"allowed": false, "deny": [{"id": "internal", "msg": sprintf(
		"namespace %q is not replicated into OPA's data.kubernetes yet, so its tenant is unknown; retry in a moment, and if it persists check that kube-mgmt replicates namespaces",
		[_namespace],
	)}],
	"warn": [], "dryrun": [],
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
