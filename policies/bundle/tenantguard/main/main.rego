# METADATA
# title: tenantguard entrypoints
# description: |
#   The two queries an admission controller asks: which JSON patch operations to
#   apply (mutations), and the decision on the possibly mutated request. Requests
#   are routed by kind so that only the rule families that can apply are
#   evaluated. Each violation is {id, msg}; settings.enforcement maps a rule id
#   to deny (default), warn or dryrun.
#
#   Input: {"request": <AdmissionReview v1 request>, "cluster": {"namespace":
#   {"name", "labels"}, "counts": {TENANT: {KEY: N}}, "priorityClasses": {NAME:
#   {"priority", "preemptionPolicy"}}}}. Data: data.tenantguard.registry (the
#   compiled registry) and data.tenantguard.runtime.
package tenantguard.main

import data.tenantguard.lib.tenancy
import data.tenantguard.rules

# One rule per kind, so that rule indexing picks the route without building the
# whole table on every request.
_route("/Namespace") := ["namespaces"]

_route("/PersistentVolumeClaim") := ["storage", "quota", "managed"]

_route("/Service") := ["services", "quota", "managed"]

_route(kind) := ["pods", "priority", "storage", "quota", "managed"] if {
	kind in {
		"/Pod", "/PodTemplate", "/ReplicationController",
		"apps/ReplicaSet", "apps/Deployment", "apps/StatefulSet", "apps/DaemonSet",
		"batch/Job", "batch/CronJob",
	}
}

# METADATA
# description: The rule families that can apply to the request's kind.
families := route if {
	route := _route(tenancy.kind_key)
} else := ["quota", "managed"]

# METADATA
# description: Every rule the request breaks, as {id, msg}.
violations contains violation if {
	some family in families
	some violation in rules[family].violations
}

_mode(id) := mode if {
	mode := data.tenantguard.registry.settings.enforcement[id]
} else := "deny"

_with_mode(mode) := [violation |
	some violation in violations
	_mode(violation.id) == mode
]

# METADATA
# entrypoint: true
# description: |
#   The validating decision: allowed unless a rule in deny mode is broken; the
#   violations split by enforcement mode, each list sorted.
decision := _clean if {
	count(violations) == 0
} else := {
	"allowed": count(_deny) == 0,
	"deny": _deny,
	"warn": _with_mode("warn"),
	"dryrun": _with_mode("dryrun"),
}

# The violations in deny mode, worked out once for both of decision's uses.
_deny := _with_mode("deny")

_clean := {"allowed": true, "deny": [], "warn": [], "dryrun": []}

# METADATA
# entrypoint: true
# description: JSON patch operations (RFC 6902) the mutating webhook applies, in a stable order.
mutations := [operation |
	some family in families
	some operation in rules[family].mutations
]
