# METADATA
# title: tenantguard entrypoints
# description: |
#   The two queries an admission controller asks: which JSON patch operations to
#   apply (mutations), and the decision on the possibly mutated request. Requests
#   are routed by kind so that only the rule families that judge the kind are
#   evaluated; the routes come from the rules' own METADATA (their kinds), which
#   tenantguard reads into data.tenantguard.catalog. Each violation is {id, msg};
#   settings.enforcement maps a rule id to deny, warn or dryrun, and a rule
#   declares its default.
#
#   Input: {"request": <AdmissionReview v1 request>, "cluster": {"namespace":
#   {"name", "labels"}, "counts": {TENANT: {KEY: N}}, "priorityClasses": {NAME:
#   {"priority", "preemptionPolicy"}}, "hosts": {HOST: [{"group", "kind",
#   "namespace", "name", "tenant", "host"}]} (the other holders of the hosts
#   an Ingress or route serves), "resources": {"adds", "used", "room":
#   {KEY: N}, "namespaces"} (the tenant-wide sums a create would take over
#   their limit)}}; each part only where the request needs it. Data:
#   data.tenantguard.registry (the compiled registry), data.tenantguard.catalog
#   (the routes and the rules' default enforcement) and data.tenantguard.runtime.
package tenantguard.main

import data.tenantguard.lib.podspec
import data.tenantguard.lib.tenancy
import data.tenantguard.rules

_catalog := data.tenantguard.catalog

# The catalog holds both route tables: without them nothing is decided, so
# that a bundle missing its catalog (or holding half of one) fails closed.
_routed if {
	is_object(_catalog.routes.validate)
	is_object(_catalog.routes.mutate)
}

# The families a route table gives the request's kind: its own, else those
# that judge every kind ("*", e.g. the counted resources).
_route(routes) := families if {
	families := routes[tenancy.kind_key]
} else := object.get(routes, "*", [])

# METADATA
# description: The rule families that can refuse the request.
families := _route(_catalog.routes.validate)

# METADATA
# description: The rule families that can mutate the request.
mutating_families := _route(_catalog.routes.mutate)

# METADATA
# description: Every rule the request breaks, as {id, msg}.
violations contains violation if {
	some family in families
	some violation in rules[family].violations
}

_mode(id) := mode if {
	mode := data.tenantguard.registry.settings.enforcement[id]
} else := mode if {
	mode := _catalog.enforcement[id]
} else := "deny"

_with_mode(mode) := [violation |
	some violation in violations
	_mode(violation.id) == mode
]

# METADATA
# entrypoint: true
# description: |
#   The validating decision: allowed unless a rule in deny mode is broken; the
#   violations split by enforcement mode, each list sorted. Undefined without
#   a catalog, so that a bundle missing it fails closed.
decision := _clean if {
	_routed
	count(violations) == 0
} else := {
	"allowed": count(_deny) == 0,
	"deny": _deny,
	"warn": _with_mode("warn"),
	"dryrun": _with_mode("dryrun"),
} if {
	_routed
}

# The violations in deny mode, worked out once for both of decision's uses.
_deny := _with_mode("deny")

_clean := {"allowed": true, "deny": [], "warn": [], "dryrun": []}

# METADATA
# entrypoint: true
# description: |
#   JSON patch operations (RFC 6902) the mutating webhook applies, in a stable
#   order; none to a ReplicaSet a controller owns (podspec.controlled_replica_set),
#   whose template must stay its owner's.
mutations := [operation |
	some family in mutating_families
	some operation in rules[family].mutations
] if {
	_routed
	not podspec.controlled_replica_set
} else := [] if {
	_routed
}
