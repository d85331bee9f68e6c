# METADATA
# title: Ingress and Gateway classes and hostnames
# description: |
#   ingress-class, gateway-class and hostname: on a shared cluster the edge is
#   where tenants collide. A tenant's Ingresses may only use the IngressClasses
#   it allows (the class named by spec.ingressClassName or, as controllers
#   still read it, the kubernetes.io/ingress.class annotation), and get the
#   tenant default when they name none; its Gateways may only use the
#   GatewayClasses it allows; and every host its Ingresses, Gateways and
#   routes publish must be one of its own. On an update only what changed is
#   judged: a class changed, a host added. Tenants without an ingress entry
#   are unrestricted.
# custom:
#   reads: [registry.tenants.ingress.classes, registry.tenants.ingress.gatewayClasses, registry.tenants.ingress.hostnames]
#   operations: [CREATE, UPDATE]
#   engines: [opa, gatekeeper, kyverno, vap]
package tenantguard.rules.ingress

import data.tenantguard.lib.hosts
import data.tenantguard.lib.tenancy

_annotation := "kubernetes.io/ingress.class"

_policy := tenancy.tenant.ingress

_new := tenancy.new_object

_old := tenancy.old_object

_applies if {
	tenancy.in_tenant_namespace
	input.request.operation in {"CREATE", "UPDATE"}
	object.get(input.request, "subResource", "") == ""
}

# The IngressClasses an Ingress names: the legacy annotation, which most
# controllers read first, and spec.ingressClassName, which others prefer.
# The API server refuses the two apart on create, not on update, so both are
# judged.
_classes(ingress) := {class |
	some class in [object.get(ingress, ["metadata", "annotations", _annotation], null), object.get(ingress, ["spec", "ingressClassName"], null)]
	is_string(class)
}

_ingress if tenancy.kind_key == "networking.k8s.io/Ingress"

# METADATA
# title: IngressClasses
# description: |
#   Ingresses may only use the IngressClasses of ingress.classes.allowed or
#   allowedRegex, by annotation or by spec.ingressClassName; one created
#   without a class (or updated to have none) gets ingress.classes.default,
#   and is refused when the tenant has none.
# custom:
#   id: ingress-class
#   kinds: [networking.k8s.io/Ingress]
#   mutates: true
violations contains {"id": "ingress-class", "msg": msg} if {
	_applies
	_ingress
	classes := _policy.classes
	some class in _classes(_new)
	not class in _classes(_old)
	not tenancy.name_allowed(classes, class)
	msg := sprintf("IngressClass %q of %s is not allowed for tenant %q; allowed: %s", [class, tenancy.object_text, tenancy.namespace_tenant, tenancy.allowed_text(classes)])
}

violations contains {"id": "ingress-class", "msg": msg} if {
	_applies
	_ingress
	classes := _policy.classes
	object.get(classes, "default", "") == ""
	_newly_classless
	msg := sprintf("%s names no IngressClass and tenant %q has no default one; name one of: %s", [tenancy.object_text, tenancy.namespace_tenant, tenancy.allowed_text(classes)])
}

# An Ingress naming no class: created so, or made so by an update (it would
# go to whichever controller serves Ingresses without a class).
_newly_classless if {
	count(_classes(_new)) == 0
	_classless_change
}

_classless_change if input.request.operation == "CREATE"

_classless_change if {
	input.request.operation == "UPDATE"
	count(_classes(_old)) > 0
}

# METADATA
# description: |
#   The JSON patch operation setting the tenant default IngressClass on an
#   Ingress created without a class or updated to have none.
mutations contains {"op": "add", "path": "/spec/ingressClassName", "value": _policy.classes.default} if {
	_applies
	_ingress
	_policy.classes.default != ""
	_newly_classless
	is_object(_new.spec)
}

# METADATA
# title: GatewayClasses
# description: Gateways may only use the GatewayClasses of ingress.gatewayClasses.allowed or allowedRegex.
# custom:
#   id: gateway-class
#   kinds: [gateway.networking.k8s.io/Gateway]
violations contains {"id": "gateway-class", "msg": msg} if {
	_applies
	tenancy.kind_key == "gateway.networking.k8s.io/Gateway"
	classes := _policy.gatewayClasses
	class := object.get(_new, ["spec", "gatewayClassName"], "")
	class != object.get(_old, ["spec", "gatewayClassName"], "")
	not tenancy.name_allowed(classes, class)
	msg := sprintf("GatewayClass %q of %s is not allowed for tenant %q; allowed: %s", [class, tenancy.object_text, tenancy.namespace_tenant, tenancy.allowed_text(classes)])
}

# METADATA
# title: Hostnames
# description: |
#   Every host an Ingress (rules and TLS), a Gateway, ListenerSet or
#   XListenerSet (listeners) or an HTTPRoute, GRPCRoute or TLSRoute publishes must be in
#   ingress.hostnames.allowed (exact, or under a "*.suffix" pattern) or match
#   allowedRegex; a wildcard host needs allowWildcard too, and a place that
#   names no host (it would serve every host) is refused, as is a route
#   without hostnames attached to another namespace's Gateway (it would take
#   every host of that Gateway's listeners).
# custom:
#   id: hostname
#   kinds:
#     - networking.k8s.io/Ingress
#     - gateway.networking.k8s.io/Gateway
#     - gateway.networking.k8s.io/ListenerSet
#     - gateway.networking.x-k8s.io/XListenerSet
#     - gateway.networking.k8s.io/HTTPRoute
#     - gateway.networking.k8s.io/GRPCRoute
#     - gateway.networking.k8s.io/TLSRoute
violations contains {"id": "hostname", "msg": msg} if {
	_applies
	policy := _policy.hostnames
	some entry in hosts.named(_new)
	not entry.host in _old_hosts
	msg := _refusal(policy, entry)
}

_old_hosts := {entry.host | some entry in hosts.named(_old)}

_refusal(policy, entry) := sprintf("%s names no hostnames and attaches to %s, so it would take every host its listeners serve; name hosts of tenant %q: %s", [tenancy.object_text, entry.parent, tenancy.namespace_tenant, hosts.allowed_text(policy)]) if {
	entry.host == ""
	entry.parent
} else := sprintf("%s%s names no host, so it would serve every host name its controller serves; name hosts of tenant %q: %s", [entry["in"], tenancy.object_text, tenancy.namespace_tenant, hosts.allowed_text(policy)]) if {
	entry.host == ""
} else := sprintf("wildcard host %q of %s%s is not allowed for tenant %q; name each host instead", [entry.host, entry["in"], tenancy.object_text, tenancy.namespace_tenant]) if {
	hosts.wildcard(entry.host)
	not policy.allowWildcard
} else := sprintf("host %q of %s%s is not allowed for tenant %q; allowed: %s", [entry.host, entry["in"], tenancy.object_text, tenancy.namespace_tenant, hosts.allowed_text(policy)]) if {
	not hosts.allowed(policy, entry.host)
}
