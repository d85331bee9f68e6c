# METADATA
# title: PriorityClasses
# description: |
#   priority-class: pods of a tenant may only name the PriorityClasses it allows,
#   in Pods and in every pod template; a pod or template created without one gets
#   the tenant default. Tenants without a priorityClasses entry are unrestricted.
# custom:
#   reads: [registry.tenants.priorityClasses]
#   kinds: [pod-carriers]
#   operations: [CREATE, UPDATE]
#   engines: [opa, gatekeeper, kyverno, vap]
package tenantguard.rules.priority

import data.tenantguard.lib.podspec
import data.tenantguard.lib.tenancy

_policy := tenancy.tenant.priorityClasses

_applies if {
	tenancy.in_tenant_namespace
	podspec.carries_pod_spec
	_policy
}

# METADATA
# title: PriorityClasses
# description: |
#   Pods may only name the PriorityClasses of priorityClasses.allowed or
#   allowedRegex; one that names none gets priorityClasses.default.
# custom:
#   id: priority-class
#   mutates: true
violations contains {"id": "priority-class", "msg": msg} if {
	_applies
	podspec.spec_changed
	name := podspec.spec.priorityClassName
	name != ""
	not tenancy.name_allowed(_policy, name)
	msg := sprintf("PriorityClass %q is not allowed for tenant %q; allowed: %s", [name, tenancy.namespace_tenant, tenancy.allowed_text(_policy)])
}

# METADATA
# description: |
#   JSON patch operations setting the tenant default PriorityClass on a created
#   pod or template that names none. For a Pod, the class's priority value and
#   preemption policy are set too when the cluster view knows the class, because
#   the API server resolves them before webhooks run, and removed otherwise.
mutations contains {"op": "add", "path": concat("", [podspec.json_path, "/priorityClassName"]), "value": _policy.default} if {
	_needs_default
}

mutations contains {"op": "add", "path": concat("", [podspec.json_path, "/", field]), "value": value} if {
	_needs_default
	tenancy.kind_key == "Pod"
	some field, value in input.cluster.priorityClasses[_policy.default]
}

# A class the view does not know yet: the values the Priority plugin set for
# a pod without a class are removed, for it to set the class's when it runs
# again after the webhooks; left, they would not be the class's and it would
# refuse the pod.
mutations contains {"op": "remove", "path": concat("", [podspec.json_path, "/", field])} if {
	_needs_default
	tenancy.kind_key == "Pod"
	not input.cluster.priorityClasses[_policy.default]
	some field in ["priority", "preemptionPolicy"]
	object.get(podspec.spec, field, null) != null
}

_needs_default if {
	_applies
	input.request.operation == "CREATE"
	object.get(podspec.spec, "priorityClassName", "") == ""
	_policy.default != ""
}
