# METADATA
# title: RuntimeClasses
# description: |
#   runtime-class: pods of a tenant may only name the RuntimeClasses it allows
#   (a sandboxed runtime for untrusted tenants, say), in Pods and in every pod
#   template; a pod or template created without one gets the tenant default,
#   and is refused when the tenant has none.
#   Tenants without a runtimeClasses entry are unrestricted.
# custom:
#   reads: [registry.tenants.runtimeClasses]
#   kinds: [pod-carriers]
#   operations: [CREATE, UPDATE]
#   engines: [opa, gatekeeper, kyverno, vap]
package tenantguard.rules.runtime

import data.tenantguard.lib.podspec
import data.tenantguard.lib.tenancy

_policy := tenancy.tenant.runtimeClasses

_applies if {
	tenancy.in_tenant_namespace
	podspec.carries_pod_spec
	_policy
}

# METADATA
# title: RuntimeClasses
# description: |
#   Pods may only name the RuntimeClasses of runtimeClasses.allowed or
#   allowedRegex; one that names none gets runtimeClasses.default, and is
#   refused when the tenant has none (it would run on the nodes' default
#   runtime, which the tenant's list leaves out).
# custom:
#   id: runtime-class
#   mutates: true
violations contains {"id": "runtime-class", "msg": msg} if {
	_applies
	podspec.spec_changed
	name := object.get(podspec.spec, "runtimeClassName", "")
	name != ""
	not tenancy.name_allowed(_policy, name)
	msg := sprintf("RuntimeClass %q of %s is not allowed for tenant %q; allowed: %s", [name, tenancy.object_text, tenancy.namespace_tenant, tenancy.allowed_text(_policy)])
}

violations contains {"id": "runtime-class", "msg": msg} if {
	_applies
	object.get(_policy, "default", "") == ""
	object.get(podspec.spec, "runtimeClassName", "") == ""
	_newly_classless
	msg := sprintf("%s names no RuntimeClass, so it would run on the nodes' default runtime, and tenant %q has no default one; name one of: %s", [tenancy.object_text, tenancy.namespace_tenant, tenancy.allowed_text(_policy)])
}

# A pod naming no class is judged on a create, and on an update that drops
# its class; one that named none before is left as it runs.
_newly_classless if input.request.operation == "CREATE"

_newly_classless if {
	input.request.operation == "UPDATE"
	object.get(podspec.old_spec, "runtimeClassName", "") != ""
}

# METADATA
# description: |
#   The JSON patch operation setting the tenant default RuntimeClass on a
#   created pod or template that names none. The API server's RuntimeClass
#   admission plugin runs again after a webhook changes a pod, and adds the
#   class's overhead and scheduling then.
mutations contains {"op": "add", "path": concat("", [podspec.json_path, "/runtimeClassName"]), "value": _policy.default} if {
	_applies
	input.request.operation == "CREATE"
	object.get(podspec.spec, "runtimeClassName", "") == ""
	_policy.default != ""
}
