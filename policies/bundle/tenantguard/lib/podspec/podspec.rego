# METADATA
# title: Pod specs wherever they are carried
# description: |
#   Finds the pod spec in every kind that carries one (carriers), with its
#   containers of every sort, so that each rule is written once for all of
#   them.
package tenantguard.lib.podspec

import data.tenantguard.lib.tenancy

# METADATA
# title: Every kind that carries a pod spec
# description: |
#   Every kind that carries a pod spec, with the path of the spec inside the
#   object (dot-separated). This is the one list of pod carriers: rules name
#   it as the kind set "pod-carriers" in their kinds, and the webhook
#   configurations, the chart, the CEL and Gatekeeper exports all read it
#   from here. The custom field subresources names, by kind, the
#   subresources through which a carrier's pods change, which the webhooks
#   must send too. (One flat object of strings, so that the plan evaluator
#   builds it once rather than on every request.)
# custom:
#   kindSet: pod-carriers
#   subresources:
#     Pod: [ephemeralcontainers]
carriers := {
	"Pod": "spec",
	"PodTemplate": "template.spec",
	"ReplicationController": "spec.template.spec",
	"apps/ReplicaSet": "spec.template.spec",
	"apps/Deployment": "spec.template.spec",
	"apps/StatefulSet": "spec.template.spec",
	"apps/DaemonSet": "spec.template.spec",
	"batch/Job": "spec.template.spec",
	"batch/CronJob": "spec.jobTemplate.spec.template.spec",
}

# METADATA
# description: The path of the pod spec inside the request's object.
path := split(carriers[tenancy.kind_key], ".")

# METADATA
# description: The request writes an object that carries a pod spec.
carries_pod_spec if {
	path
	input.request.operation in {"CREATE", "UPDATE"}
}

# METADATA
# description: |
#   The request writes a ReplicaSet that a controller owns (a Deployment, or
#   another's such as Argo Rollouts), which takes none of the tenant's
#   defaults. Its template is the owner's, copied by the controller, which
#   finds the ReplicaSet again by comparing the two: a default set on the
#   ReplicaSet alone (after an update dropped it from the Deployment, or on a
#   Deployment older than the default) would make them differ, and the
#   controller would create ReplicaSet after ReplicaSet. Its pods take the
#   defaults when they are created.
controlled_replica_set if {
	tenancy.kind_key == "apps/ReplicaSet"
	some owner in object.get(tenancy.new_object, ["metadata", "ownerReferences"], [])
	owner.controller == true
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
#   object admitted under older rules can still be cleaned up; nor is a pod's
#   in-place resize (pods/resize), which changes its containers' resources
#   only, which the rules reading this do not read.
spec_changed if input.request.operation == "CREATE"

spec_changed if {
	spec != old_spec
	object.get(input.request, "subResource", "") != "resize"
}

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
# description: How a denial names each sort of container, by its field.
sort_name := {
	"initContainers": "init container",
	"containers": "container",
	"ephemeralContainers": "ephemeral container",
}

# METADATA
# description: The spec's volumes.
volumes := object.get(spec, "volumes", [])
