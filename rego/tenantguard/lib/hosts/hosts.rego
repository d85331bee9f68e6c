# METADATA
# title: Hosts an object publishes
# description: |
#   Every host name an Ingress, a Gateway, a ListenerSet (or the experimental
#   XListenerSet it was before, gateway.networking.x-k8s.io) or a route names,
#   wherever it names one, so that the hostname rules are written once for all of them. A place
#   that names no host serves every host: an Ingress rule without a host or a
#   default backend, a listener (of a Gateway, or of a ListenerSet, which adds
#   listeners to a shared Gateway) of protocol HTTP, HTTPS or TLS without a
#   hostname. A route without hostnames takes the hostnames of the listeners
#   it attaches to: it names none of its own when its parents are in its
#   namespace (whose Gateways and ListenerSets are judged themselves), and
#   serves every host when one is a Gateway or ListenerSet of another
#   namespace (a shared Gateway, whose listeners its tenant does not choose).
package tenantguard.lib.hosts

import data.tenantguard.lib.tenancy

# METADATA
# description: The route kinds of the Gateway API that name hostnames.
route_kinds := {
	"gateway.networking.k8s.io/HTTPRoute",
	"gateway.networking.k8s.io/GRPCRoute",
	"gateway.networking.k8s.io/TLSRoute",
}

# METADATA
# description: |
#   The ListenerSet kinds, which add listeners to a Gateway (a shared one, of
#   another namespace, included): ListenerSet, and XListenerSet, its
#   experimental form (Gateway API v1.3 to v1.4), of the same shape.
listener_set_kinds := {
	"gateway.networking.k8s.io/ListenerSet",
	"gateway.networking.x-k8s.io/XListenerSet",
}

# The ListenerSet kinds by kind alone, as served takes them.
_listener_set_names := {kinds[key].kind | some key in listener_set_kinds}

# METADATA
# description: |
#   The kinds whose objects serve hosts (served), by their key as
#   tenancy.kind_key names them: group, kind, and the resource kube-mgmt
#   replicates them under. A Gateway binds hosts and serves none. The
#   server's host index holds the same kinds (a Go test keeps them equal).
kinds := {
	"networking.k8s.io/Ingress": {"group": "networking.k8s.io", "kind": "Ingress", "resource": "ingresses"},
	"gateway.networking.k8s.io/HTTPRoute": {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "resource": "httproutes"},
	"gateway.networking.k8s.io/GRPCRoute": {"group": "gateway.networking.k8s.io", "kind": "GRPCRoute", "resource": "grpcroutes"},
	"gateway.networking.k8s.io/TLSRoute": {"group": "gateway.networking.k8s.io", "kind": "TLSRoute", "resource": "tlsroutes"},
	"gateway.networking.k8s.io/ListenerSet": {"group": "gateway.networking.k8s.io", "kind": "ListenerSet", "resource": "listenersets"},
	"gateway.networking.x-k8s.io/XListenerSet": {"group": "gateway.networking.x-k8s.io", "kind": "XListenerSet", "resource": "xlistenersets"},
}

# Listener protocols that route by host name.
_host_protocols := {"HTTP", "HTTPS", "TLS"}

# METADATA
# description: |
#   The hosts obj (of the request's kind) names, each as {"host", "in"}: "in"
#   is where, for messages ("" for the object itself, `listener "https" of `
#   for a listener); host is "" for a place that serves every host.
named(obj) := _ingress(obj) if {
	tenancy.kind_key == "networking.k8s.io/Ingress"
} else := _listeners(obj) if {
	tenancy.kind_key in _listener_kinds
} else := _route(obj) if {
	tenancy.kind_key in route_kinds
} else := set()

_route(obj) := {{"host": host, "in": ""} | some host in obj.spec.hostnames} if {
	count(object.get(obj, ["spec", "hostnames"], [])) > 0
} else := {{"host": "", "in": "", "parent": parent} |
	some parent in _foreign_parents(obj)
}

# The Gateways and ListenerSets of other namespaces a route attaches to, as
# "Gateway "shared" in namespace "infra"".
_foreign_parents(obj) := {sprintf("%s %q in namespace %q", [kind, ref.name, ref.namespace]) |
	some ref in object.get(obj, ["spec", "parentRefs"], [])
	kind := object.get(ref, "kind", "Gateway")
	concat("/", [object.get(ref, "group", "gateway.networking.k8s.io"), kind]) in _parent_kinds
	ref.namespace != input.request.namespace
}

# The kinds a route attaches to that listen: Gateways and ListenerSets.
_parent_kinds := {"gateway.networking.k8s.io/Gateway"} | listener_set_kinds

_ingress(obj) := ({{"host": object.get(rule, "host", ""), "in": ""} |
	some rule in object.get(obj, ["spec", "rules"], [])
} | {{"host": host, "in": ""} |
	some tls in object.get(obj, ["spec", "tls"], [])
	some host in object.get(tls, "hosts", [])
}) | {{"host": "", "in": ""} | obj.spec.defaultBackend}

# The kinds whose spec.listeners name hosts.
_listener_kinds := {"gateway.networking.k8s.io/Gateway"} | listener_set_kinds

_listeners(obj) := {{"host": host, "in": sprintf("listener %q of ", [object.get(listener, "name", "")])} |
	some listener in object.get(obj, ["spec", "listeners"], [])
	host := object.get(listener, "hostname", "")
	_names_host(listener, host)
}

_names_host(_, host) if host != ""

_names_host(listener, "") if listener.protocol in _host_protocols

# METADATA
# description: |
#   The hosts obj, an Ingress, a route or a ListenerSet or XListenerSet (kind, as "Ingress")
#   of namespace, serves, lower-cased, as hostname-collision reads them: an
#   Ingress's rules' hosts (its TLS hosts name its certificate), a route's
#   hostnames, the hostnames of a ListenerSet's listeners when it attaches to
#   a Gateway of another namespace (a shared Gateway, where the routes that
#   attach to it take that host's traffic; on a Gateway of its own namespace
#   it binds them for that Gateway's address only, as a Gateway does).
served(kind, namespace, obj) := {lower(host) |
	some host in _served(kind, namespace, obj)
	is_string(host)
	host != ""
}

_served("Ingress", _, obj) := [object.get(rule, "host", "") | some rule in object.get(obj, ["spec", "rules"], [])]

_served(kind, namespace, obj) := [object.get(listener, "hostname", "") |
	some listener in object.get(obj, ["spec", "listeners"], [])
] if {
	kind in _listener_set_names
	not object.get(obj, ["spec", "parentRef", "namespace"], "") in {"", namespace}
}

_served(kind, _, obj) := object.get(obj, ["spec", "hostnames"], []) if {
	not kind in _listener_set_names
	kind != "Ingress"
}

# METADATA
# description: A host is a wildcard ("*.example.com").
wildcard(host) if startswith(host, "*.")

# METADATA
# description: |
#   Two hosts served by objects of two kinds collide: the same host, or a
#   wildcard and a name it covers (an Ingress's *.x covers one label, a
#   route's any number: the Gateway API reads its hostnames as suffixes), a
#   narrower wildcard included (a route's *.x covers *.shop.x).
related(host, _, host, _)

related(host, _, served, served_kind) if {
	wildcard(served)
	_covers(served, served_kind, host)
}

related(host, host_kind, served, _) if {
	wildcard(host)
	_covers(host, host_kind, served)
}

# METADATA
# description: A host is under the wildcard w, which is broader.
under(host, w) if {
	wildcard(w)
	host != w
	endswith(host, substring(w, 1, -1))
}

# METADATA
# description: |
#   The host a holder relates to host by, of the hosts it serves related to
#   it (served): undefined when it serves host itself, else the first in
#   order.
via(host, served) := min(served) if not host in served

# A wildcard covers a host under it, an exact one or a narrower wildcard
# (at any depth only: "*.shop" is a label of its own), not itself.
_covers(wildcard_host, kind, exact) if {
	exact != wildcard_host
	suffix := substring(wildcard_host, 1, -1)
	count(exact) > count(suffix)
	endswith(exact, suffix)
	_depth_covered(kind, substring(exact, 0, count(exact) - count(suffix)))
}

_depth_covered(kind, _) if kind != "Ingress"

_depth_covered("Ingress", label) if not contains(label, ".")

# METADATA
# description: |
#   A host policy ({allowed, allowedRegex}) allows a host: listed exactly, or
#   under a "*.suffix" pattern at a label boundary (a wildcard host too, which
#   serves names under the suffix only), or matched by the regex.
allowed(policy, host) if host in policy.allowed

allowed(policy, host) if {
	some pattern in policy.allowed
	startswith(pattern, "*.")
	endswith(host, substring(pattern, 1, -1))
}

allowed(policy, host) if {
	policy.allowedRegex != ""
	regex.match(policy.allowedRegex, host)
}

# METADATA
# description: What a host policy allows, for denial messages.
allowed_text(policy) := tenancy.allowed_text(policy)
