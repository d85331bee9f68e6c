# METADATA
# title: Node placement
# description: |
#   node-placement: a tenant's pods run on its own nodes. The mutating webhook
#   merges nodePlacement.nodeSelector into every pod spec created and adds
#   nodePlacement.tolerations; a pod spec that names another value for one of
#   those keys, or sets spec.nodeName (which skips the scheduler) without
#   nodePlacement.allowNodeName, is refused. Pods are judged on CREATE (their
#   placement is immutable), templates on CREATE and on UPDATE. Tenants
#   without a nodePlacement entry are unrestricted.
# custom:
#   reads: [registry.tenants.nodePlacement]
#   kinds: [pod-carriers]
#   operations: [CREATE, UPDATE]
#   engines: [opa, gatekeeper, kyverno, vap]
package tenantguard.rules.nodes

import data.tenantguard.lib.podspec
import data.tenantguard.lib.tenancy

_policy := tenancy.tenant.nodePlacement

_selector := object.get(_policy, "nodeSelector", {})

_tolerations := object.get(_policy, "tolerations", [])

_applies if {
	tenancy.in_tenant_namespace
	podspec.carries_pod_spec
	_policy
	not _pod_update
}

_pod_update if {
	tenancy.kind_key == "Pod"
	input.request.operation == "UPDATE"
}

_pod_selector := selector if {
	selector := podspec.spec.nodeSelector
	is_object(selector)
} else := {}

# METADATA
# title: Node placement
# description: |
#   Pods keep nodePlacement.nodeSelector (the mutating webhook adds it) and
#   may not set spec.nodeName unless nodePlacement.allowNodeName.
# custom:
#   id: node-placement
#   mutates: true
violations contains {"id": "node-placement", "msg": msg} if {
	_applies
	podspec.spec_changed
	some key, value in _selector
	given := _pod_selector[key]
	given != value
	msg := sprintf("%s sets nodeSelector %s=%q, but the pods of tenant %q run on the nodes with %s=%q; remove the key or set it to %q", [tenancy.object_text, key, given, tenancy.namespace_tenant, key, value, value])
}

violations contains {"id": "node-placement", "msg": msg} if {
	_applies
	podspec.spec_changed
	node := object.get(podspec.spec, "nodeName", "")
	node != ""
	not _policy.allowNodeName
	msg := sprintf("%s sets nodeName %q, which skips the scheduler and is not allowed for tenant %q; remove it and let the tenant's nodeSelector place the pod", [tenancy.object_text, node, tenancy.namespace_tenant])
}

# METADATA
# description: |
#   JSON patch operations adding the tenant's nodeSelector keys and
#   tolerations that a created pod or template lacks.
mutations contains {"op": "add", "path": concat("", [podspec.json_path, "/nodeSelector"]), "value": _selector} if {
	_creates
	count(_selector) > 0
	count(_pod_selector) == 0
}

mutations contains {"op": "add", "path": concat("", [podspec.json_path, "/nodeSelector/", tenancy.pointer_token(key)]), "value": value} if {
	_creates
	count(_pod_selector) > 0
	some key, value in _selector
	not key in object.keys(_pod_selector)
}

mutations contains {"op": "add", "path": concat("", [podspec.json_path, "/tolerations"]), "value": _tolerations} if {
	_creates
	count(_tolerations) > 0
	count(_pod_tolerations) == 0
}

mutations contains {"op": "add", "path": concat("", [podspec.json_path, "/tolerations/-"]), "value": toleration} if {
	_creates
	count(_pod_tolerations) > 0
	some toleration in _tolerations
	not _tolerated(toleration)
}

_creates if {
	_applies
	input.request.operation == "CREATE"
}

_pod_tolerations := tolerations if {
	tolerations := podspec.spec.tolerations
	is_array(tolerations)
} else := []

# The pod already has the toleration, written with or without its default
# operator.
_tolerated(want) if {
	some t in _pod_tolerations
	every field in ["key", "value", "effect"] {
		object.get(t, field, "") == object.get(want, field, "")
	}
	object.get(t, "operator", "Equal") == want.operator
	object.get(t, "tolerationSeconds", null) == object.get(want, "tolerationSeconds", null)
}
