# METADATA
# title: Pod specs wherever they are carried
# description: |
#   Finds the pod spec in every kind that carries one (carriers), with its
#   containers of every sort, so that each rule is written once for all of
#   them.
package tenantguard.lib.podspec

import data.tenantguard.lib.tenancy

# METADATA
# title: Pod carriers
# description: |
#   Every kind that carries a pod spec, with the path of the spec inside the
#   object and the subresources through which its pods change. This is the
#   one list of pod carriers: rules name it as the kind set "pod-carriers" in
#   their kinds, and the webhook configurations, the chart, the CEL and
#   Gatekeeper exports all read it from here.
# custom:
#   kindSet: pod-carriers
carriers := {
	"Pod": {"path": ["spec"], "subresources": ["ephemeralcontainers"]},
	"PodTemplate": {"path": ["template", "spec"]},
	"ReplicationController": {"path": ["spec", "template", "spec"]},
	"apps/ReplicaSet": {"path": ["spec", "template", "spec"]},
	"apps/Deployment": {"path": ["spec", "template", "spec"]},
	"apps/StatefulSet": {"path": ["spec", "template", "spec"]},
	"apps/DaemonSet": {"path": ["spec", "template", "spec"]},
	"batch/Job": {"path": ["spec", "template", "spec"]},
	"batch/CronJob": {"path": ["spec", "jobTemplate", "spec", "template", "spec"]},
}

# METADATA
# description: The path of the pod spec inside the request's object.
path := carriers[tenancy.kind_key].path

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
