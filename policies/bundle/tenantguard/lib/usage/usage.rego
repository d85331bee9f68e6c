# METADATA
# title: What pods and claims add to resource quotas
# description: |
#   The usage of a pod or claim as ResourceQuota counts it, for the engines
#   that compute tenant-wide sums themselves from replicated objects (the
#   OPA bundle's kube-mgmt adapter, Gatekeeper's synced inventory); the
#   admission server computes the same with Kubernetes' own helpers (Go
#   package usage), and the shared corpus holds the two equal. Amounts are
#   integers in thousandths of a CPU for CPU keys and in whole units
#   (bytes, devices), rounded up, otherwise; keys are canonical
#   (requests.cpu, limits.memory, requests.storage,
#   CLASS.storageclass.storage.k8s.io/requests.storage ...).
package tenantguard.lib.usage

# METADATA
# description: A quota key's canonical name (cpu counts as requests.cpu).
canonical(key) := concat("", ["requests.", key]) if {
	_short(key)
} else := key

_short(key) if key in {"cpu", "memory", "ephemeral-storage"}

_short(key) if startswith(key, "hugepages-")

# METADATA
# description: A quantity as an amount of key (thousandths for CPU).
amount(key, q) := _whole(_value(sprintf("%v", [q])) * 1000) if _milli(key)

amount(key, q) := _whole(_value(sprintf("%v", [q]))) if not _milli(key)

# A quantity's value. units.parse knows every suffix of Kubernetes'
# quantities but the micro and nano ones (100u, 1500n), read here.
_value(s) := to_number(trim_suffix(s, "u")) / 1000000 if endswith(s, "u")

else := to_number(trim_suffix(s, "n")) / 1000000000 if endswith(s, "n")

else := units.parse(s)

# x rounded up to a whole number, as Kubernetes rounds a quantity's value
# up, except that the error of binary floating point is no fraction:
# 501m is 501.00000000000006 thousandths once parsed, and 501, not 502.
_whole(x) := n if {
	n := round(x)
	abs(x - n) < 0.000000001
} else := ceil(x)

_milli("cpu")

_milli(key) if endswith(key, ".cpu")

# METADATA
# description: |
#   A pod's usage: nothing once it no longer counts (charged); else
#   requests.* and limits.* of cpu, memory and ephemeral-storage, requests
#   of hugepages and extended resources, each the larger of the sum of the
#   containers (with native sidecars) and of every init container beside
#   the sidecars started before it, plus overhead; pod-level resources
#   replace the containers' for cpu, memory and hugepages; a resize counts as soon as
#   asked for, a shrink once done (the largest of the spec's sum and the
#   status's, as the quota evaluator takes it).
pod(p) := {} if {
	not charged(p)
} else := object.union(_named("requests.", _pod_side(p, "requests")), _limits(p))

# METADATA
# description: |
#   Whether ResourceQuota counts a pod: not once it has finished, nor once
#   the grace period of its deletion has passed (a pod stuck terminating on
#   a lost node, which would otherwise keep its tenant from replacing it).
charged(p) if {
	not object.get(p, ["status", "phase"], "") in {"Succeeded", "Failed"}
	not _past_grace(p)
}

_past_grace(p) if {
	deleted := time.parse_rfc3339_ns(p.metadata.deletionTimestamp)
	time.now_ns() > deleted + (p.metadata.deletionGracePeriodSeconds * 1000000000)
}

_limits(p) := {k: n |
	some k, n in _named("limits.", _pod_side(p, "limits"))
	_compute(trim_prefix(k, "limits."))
}

# Only compute resources have limits counted; extended resources and
# hugepages count as requests.
_compute(r) if r in {"cpu", "memory", "ephemeral-storage"}

_named(prefix, side) := {k: n |
	some r, n in side
	n != 0
	_counted(prefix, r)
	k := concat("", [prefix, r])
}

_counted(_, r) if _compute(r)

_counted("requests.", r) if startswith(r, "hugepages-")

_counted("requests.", r) if {
	contains(r, "/")
	not startswith(r, "requests.")
	[domain, _] := split(r, "/")
	domain != "kubernetes.io"
	not endswith(domain, ".kubernetes.io")
}

# One side (requests or limits) of a pod, by resource, in amounts.
_pod_side(p, side) := {r: n |
	some r in _resources(p, side)
	n := _pod_amount(p, side, r)
}

_resources(p, side) := ({r |
	some field in ["containers", "initContainers"]
	some c in object.get(p, ["spec", field], [])
	some view in _views(p, side)
	some r, _ in _container(p, c, side, view)
} | {r | some r, _ in object.get(p, ["spec", "resources", side], {})}) | _overhead_resources(p, side)

# The overhead is added to every request, named by a container or not (and
# to the limits containers set).
_overhead_resources(p, "requests") := {r | some r, _ in object.get(p, ["spec", "overhead"], {})}

_overhead_resources(_, "limits") := set()

_pod_amount(p, side, r) := n + _overhead(p, r) if {
	_pod_level(r)
	q := p.spec.resources[side][r]
	n := amount(r, q)
} else := max([n |
	some view in _views(p, side)
	n := max([_main(p, side, r, view), _init(p, side, r, view)])
]) + _overhead(p, r)

# The resources pod-level resources set for the whole pod, in place of its
# containers' (IsSupportedPodLevelResource).
_pod_level(r) if r in {"cpu", "memory"}

_pod_level(r) if startswith(r, "hugepages-")

_overhead(p, r) := amount(r, q) if {
	q := p.spec.overhead[r]
} else := 0

# What the quota evaluator sums over the containers, each view apart, to
# take the largest of: what the spec asks, what the kubelet has allocated
# (requests only) and what it has actuated; so a resize counts as soon as it
# is asked for and a shrink once it is done. A resize found infeasible
# leaves the spec out.
_views(p, "requests") := ["allocated", "actuated"] if {
	_infeasible(p)
} else := ["spec", "allocated", "actuated"]

_views(p, "limits") := ["actuated"] if {
	_infeasible(p)
} else := ["spec", "actuated"]

# The first PodResizePending condition says Infeasible
# (IsPodResizeInfeasible).
_infeasible(p) if {
	conditions := [c | some c in object.get(p, ["status", "conditions"], []); c.type == "PodResizePending"]
	conditions[0].reason == "Infeasible"
}

# The containers and the native sidecars (init containers that always
# restart), which run beside them.
_main(p, side, r, view) := sum([n |
	some c in _running(p)
	n := _get(p, c, side, r, view)
])

_running(p) := array.concat(object.get(p, ["spec", "containers"], []), [c |
	some c in object.get(p, ["spec", "initContainers"], [])
	_sidecar(c)
])

_sidecar(c) if c.restartPolicy == "Always"

# Each init container beside the sidecars started before it: the largest.
_init(p, side, r, view) := max({0} | {n |
	inits := object.get(p, ["spec", "initContainers"], [])
	some i, c in inits
	before := sum([_get(p, s, side, r, view) | some s in array.slice(inits, 0, i); _sidecar(s)])
	n := before + _get(p, c, side, r, view)
})

_get(p, c, side, r, view) := amount(r, q) if {
	q := _container(p, c, side, view)[r]
} else := 0

# A container's requests or limits in one view. The spec's as the API
# server stores them (a request left out takes the limit); the status's
# when the kubelet reports them, else the next the evaluator falls back to,
# the spec last, but for a resize found infeasible.
_container(_, c, side, "spec") := _spec(c, side)

_container(p, c, "requests", "allocated") := q if {
	q := _container_status(p, c.name).allocatedResources
} else := _fallback(p, c, "requests")

_container(p, c, "requests", "actuated") := q if {
	q := _container_status(p, c.name).resources.requests
} else := q if {
	q := _container_status(p, c.name).allocatedResources
} else := _fallback(p, c, "requests")

_container(p, c, "limits", "actuated") := q if {
	q := _container_status(p, c.name).resources.limits
} else := _fallback(p, c, "limits")

_fallback(p, c, side) := {} if {
	_infeasible(p)
} else := _spec(c, side)

_spec(c, "limits") := object.get(c, ["resources", "limits"], {})

_spec(c, "requests") := object.union(object.get(c, ["resources", "limits"], {}), object.get(c, ["resources", "requests"], {}))

_container_status(p, name) := s if {
	some field in ["containerStatuses", "initContainerStatuses"]
	some s in object.get(p, ["status", field], [])
	s.name == name
} else := {}

# METADATA
# description: |
#   A claim's usage: its storage request (or the capacity allocated to it,
#   when larger), in total and under its StorageClass, and itself under its
#   StorageClass.
claim(c) := object.union({"requests.storage": storage}, _per_class(c, storage)) if {
	storage := max([
		amount("requests.storage", object.get(c, ["spec", "resources", "requests", "storage"], "0")),
		amount("requests.storage", object.get(c, ["status", "allocatedResources", "storage"], "0")),
	])
}

_per_class(c, storage) := {
	concat("", [class, ".storageclass.storage.k8s.io/requests.storage"]): storage,
	concat("", [class, ".storageclass.storage.k8s.io/persistentvolumeclaims"]): 1,
} if {
	class := _class(c)
	class != ""
} else := {}

_class(c) := c.metadata.annotations["volume.beta.kubernetes.io/storage-class"]

_class(c) := c.spec.storageClassName if not c.metadata.annotations["volume.beta.kubernetes.io/storage-class"]

# METADATA
# description: |
#   A ResourceClaim's usage: the devices it requests of each DeviceClass
#   (CLASS.deviceclass.resource.k8s.io/devices), as the API server's quota
#   evaluator counts them: an exact count counts that many (1 when not
#   given), allocationMode All the most an allocation holds (32), a request
#   with alternatives (firstAvailable) the most any of them asks of a
#   class; a mode this library does not know counts nothing. Classes
#   counting no device are left out.
device_claim(c) := {key: n |
	some class in {r.class | some r in _device_requests(c)}
	key := concat("", [class, ".deviceclass.resource.k8s.io/devices"])
	n := sum([r.n | some r in _device_requests(c); r.class == class])
	n > 0
}

# Each request's devices by class, an alternative request counting the
# most any of its alternatives asks of a class; in resource.k8s.io/v1beta1
# (which the webhook receives as sent) the exact request is the request
# itself.
_device_requests(c) := [{"class": class, "n": n} |
	some r in object.get(c, ["spec", "devices", "requests"], [])
	some class, n in _request_devices(r)
]

_request_devices(r) := {class: max([_devices(s) | some s in r.firstAvailable; s.deviceClassName == class]) |
	some s in r.firstAvailable
	class := s.deviceClassName
} if {
	count(object.get(r, "firstAvailable", [])) > 0
} else := {r.exactly.deviceClassName: _devices(r.exactly)} if {
	r.exactly
} else := {r.deviceClassName: _devices(r)} if {
	r.deviceClassName != ""
} else := {}

_devices(x) := max([object.get(x, "count", 1), 1]) if _mode(x) == "ExactCount"

_devices(x) := 32 if _mode(x) == "All"

_devices(x) := 0 if not _mode(x) in {"ExactCount", "All"}

_mode(x) := m if {
	m := object.get(x, "allocationMode", "")
	m != ""
	m != null
} else := "ExactCount"

# METADATA
# description: |
#   What a request on a pod or claim adds, by the keys of hard (the
#   tenant's resourceQuota.hard, any of a resource's names): a pod or claim
#   created, a pod's resize, a claim's update; the amounts that grow, by how
#   much. Empty for any other request.
adds(request, hard) := {key: n |
	now := _now(request)
	before := _before(request)
	some key, _ in hard
	c := canonical(key)
	n := object.get(now, c, 0) - object.get(before, c, 0)
	n > 0
}

# A resize as it asks: the PodResizePending condition the request carries
# over is the previous resize's, which it supersedes.
_now(request) := pod(json.remove(request.object, ["status/conditions"])) if {
	object.get(request, "subResource", "") == "resize"
} else := _of(request, request.object)

_of(request, obj) := pod(obj) if request.kind.kind == "Pod"

_of(request, obj) := claim(obj) if request.kind.kind == "PersistentVolumeClaim"

_of(request, obj) := device_claim(obj) if request.kind.kind == "ResourceClaim"

_before(request) := {} if request.operation == "CREATE"

_before(request) := _of(request, request.oldObject) if request.operation == "UPDATE"

# METADATA
# description: Whether the request is one whose usage counts (adds).
counted(request) if _counted_request(
	object.get(request.kind, "group", ""), request.kind.kind,
	request.operation, object.get(request, "subResource", ""),
)

_counted_request("", "Pod", "CREATE", "")

_counted_request("", "PersistentVolumeClaim", "CREATE", "")

_counted_request("resource.k8s.io", "ResourceClaim", "CREATE", "")

_counted_request("", "Pod", "UPDATE", "resize")

_counted_request("", "PersistentVolumeClaim", "UPDATE", "")

# METADATA
# description: |
#   The cluster facts of the tenant-wide resource quota rule (as the server
#   gives them, input.cluster.resources) for a request adding added
#   (adds(request, hard), not empty), by the keys of hard it would take over
#   their limit: what it adds, what the tenant uses (totals, each
#   total(key, objects)) and the room its limit leaves, in amounts
#   (thousandths of a CPU, bytes, objects), and the tenant's count of
#   namespaces. Undefined when the request fits every limit: the keys it
#   fits cannot refuse it.
facts(added, totals, hard, namespaces) := {
	"adds": {k: added[k] | some k in over},
	"used": {k: totals[k] | some k in over},
	"room": {k: room[k] | some k in over},
	"namespaces": namespaces,
} if {
	room := {k: left | some k, n in totals; left := amount(k, hard[k]) - n}
	over := {k | some k, n in added; n > room[k]}
	count(over) > 0
}

# METADATA
# description: |
#   A tenant's sum of a quota key over its objects (a list of the objects
#   the key sums: summed); finished pods count nothing.
total(key, objects) := sum([n |
	some o in objects
	n := object.get(_usage(summed(canonical(key)), o), canonical(key), 0)
])

_usage("pods", o) := pod(o)

_usage("persistentvolumeclaims", o) := claim(o)

_usage("resourceclaims", o) := device_claim(o)

# METADATA
# description: |
#   The resource whose objects a quota key sums: persistentvolumeclaims for
#   storage, resourceclaims (resource.k8s.io) for devices per DeviceClass,
#   pods for the others.
summed(key) := "persistentvolumeclaims" if {
	_of_claims(key)
} else := "resourceclaims" if {
	endswith(key, ".deviceclass.resource.k8s.io/devices")
} else := "pods"

_of_claims("requests.storage")

_of_claims(key) if contains(key, ".storageclass.storage.k8s.io/")
