# METADATA
# title: Pod specs wherever they are carried
# description: |
#   Finds the pod spec in every built-in kind that carries one (Pod, PodTemplate,
#   ReplicationController, ReplicaSet, Deployment, StatefulSet, DaemonSet, Job,
#   CronJob), with its containers of every sort, so that each rule is written
#   once for all of them.
package tenantguard.lib.podspec

import data.tenantguard.lib.tenancy

# One rule per path, so that rule indexing picks it without building a table
# on every request.
_path("/Pod") := ["spec"]

_path("/PodTemplate") := ["template", "spec"]

_path("batch/CronJob") := ["spec", "jobTemplate", "spec", "template", "spec"]

_path(kind) := ["spec", "template", "spec"] if {
	kind in {
		"/ReplicationController", "apps/ReplicaSet", "apps/Deployment",
		"apps/StatefulSet", "apps/DaemonSet", "batch/Job",
	}
}

# METADATA
# description: The path of the pod spec inside the request's object.
path := _path(tenancy.kind_key)

# METADATA
# description: The request writes an object that carries a pod spec.
carries_pod_spec if {
	path
	input.request.operation in {"CREATE", "UPDATE"}
}

# METADATA
# description: The pod spec being written.
spec := object.get(tenancy.new_object, path, {})

# METADATA
# description: The pod spec before an UPDATE.
old_spec := object.get(tenancy.old_object, path, {})

# METADATA
# description: |
#   The pod spec is new or changed. Updates that leave the spec alone (labels,
#   finalizers, status) are not re-judged, as Pod Security admission does, so an
#   object admitted under older rules can still be cleaned up.
spec_changed if input.request.operation == "CREATE"

spec_changed if spec != old_spec

# METADATA
# description: The JSON pointer of the pod spec, for patches.
json_path := concat("/", array.concat([""], path))

# METADATA
# description: Every container of the spec, with the field it is listed under.
containers contains {"field": field, "container": container} if {
	some field in ["initContainers", "containers", "ephemeralContainers"]
	some container in object.get(spec, field, [])
}

# METADATA
# description: The spec's volumes.
volumes := object.get(spec, "volumes", [])
