# METADATA
# title: Hostname collisions
# description: |
#   hostname-collision: an Ingress, HTTPRoute, GRPCRoute, TLSRoute or
#   ListenerSet of a tenant namespace may not serve a host that another object
#   already serves, in the scope its tenant's ingress.hostnameCollision gives:
#   cluster (an object in another namespace), tenant (an object in a namespace
#   of another tenant, or of none), namespace (any other object, the same
#   namespace's too, but a route and a ListenerSet, the one attaching to the
#   other) or off (the default). The hosts an object serves are its Ingress
#   rules' hosts (its TLS hosts name its certificate and serve nothing), its
#   route's hostnames, or, for a ListenerSet (or an XListenerSet, its
#   experimental form) attached to a Gateway of another
#   namespace (a shared Gateway), its listeners' hostnames, which its routes
#   serve there; compared lower-cased; a wildcard collides with the names
#   under it too (an Ingress's *.x covers one label, a route's or a
#   listener's any number, a narrower wildcard included), as a more specific
#   host under another's wildcard takes its traffic; two wildcards side by
#   side do not. A Gateway, and a ListenerSet on a Gateway of its own
#   namespace, bind hosts for that Gateway's address only and serve none. An
#   object never collides with itself, and an update is judged on the hosts
#   it adds only, so that an object whose host came to be served twice (a
#   tenant without collision scope took it, say) can still be updated and
#   deleted. Administrators are exempt.
#
#   The holders of the request's hosts come from input.cluster.hosts (HOST ->
#   [{group, kind, namespace, name, tenant, host}], host being the one the
#   holder serves when a wildcard relates it to HOST): tenantguard's server fills it
#   from its informers and the requests being decided (two parallel creates
#   of one host: one is admitted), Gatekeeper and OPA from their replicated
#   Ingresses, routes and ListenerSets.
package tenantguard.rules.collision

import data.tenantguard.lib.hosts
import data.tenantguard.lib.identity
import data.tenantguard.lib.tenancy

# The hosts the object served before an update, which it keeps unjudged.
# The hosts the old object served (an Ingress's TLS hosts serve nothing: one
# moved into a rule is judged)
_kept := hosts.served(input.request.kind.kind, input.request.namespace, tenancy.old_object) if {
	input.request.operation == "UPDATE"
} else := set()

_scope := object.get(tenancy.tenant, ["ingress", "hostnameCollision"], "off")

# a holder of the host collides in the tenant's scope
_collides("cluster", holder) if holder.namespace != input.request.namespace

_collides("tenant", holder) if holder.tenant != tenancy.namespace_tenant

_collides("namespace", holder) if not _attaches(holder)

# A route and a ListenerSet of one namespace do not collide: the route
# attaches to the listener and serves the host it binds.
_attaches(holder) if {
	holder.namespace == input.request.namespace
	{concat("/", [holder.group, holder.kind]), tenancy.kind_key} in _binds_and_serves
}

_binds_and_serves := {{listener_set, route} |
	some listener_set in hosts.listener_set_kinds
	some route in hosts.route_kinds
}

_holder_text(holder) := sprintf("%s %q in namespace %q", [holder.kind, holder.name, holder.namespace])

# METADATA
# title: Hostname collisions
# description: |
#   An Ingress, a route or a ListenerSet on a shared Gateway may not serve a
#   host that another object already serves in the scope of its tenant's ingress.hostnameCollision (cluster,
#   tenant, namespace; off by default).
# custom:
#   id: hostname-collision
#   reads: [registry.administrators, registry.tenants.ingress.hostnameCollision]
#   kinds:
#     - networking.k8s.io/Ingress
#     - gateway.networking.k8s.io/HTTPRoute
#     - gateway.networking.k8s.io/GRPCRoute
#     - gateway.networking.k8s.io/TLSRoute
#     - gateway.networking.k8s.io/ListenerSet
#     - gateway.networking.x-k8s.io/XListenerSet
#   operations: [CREATE, UPDATE]
#   engines: [opa, gatekeeper]
#   notExpressible: a collision is with the hosts other objects serve, and an admission policy sees only the request's object
violations contains {"id": "hostname-collision", "msg": msg} if {
	input.request.operation in {"CREATE", "UPDATE"}
	object.get(input.request, "subResource", "") == ""
	tenancy.in_tenant_namespace
	not identity.is_admin
	_scope != "off"
	some host, holders in object.get(input.cluster, "hosts", {})
	not host in _kept
	colliding := [holder | some holder in holders; _collides(_scope, holder)]
	count(colliding) > 0
	msg := _collision_text(host, colliding[0])
}

_collision_text(host, holder) := sprintf("host %q of %s is already served by %s; choose another host", [host, tenancy.object_text, _holder_text(holder)]) if {
	not holder.host
} else := sprintf("host %q of %s falls under wildcard host %q, already served by %s; choose another host", [host, tenancy.object_text, holder.host, _holder_text(holder)]) if {
	hosts.under(host, holder.host)
} else := sprintf("wildcard host %q of %s covers host %q, already served by %s; choose another host", [host, tenancy.object_text, holder.host, _holder_text(holder)])
