package tenantguard.lib.podspec_test

import data.tenantguard.lib.podspec

_input(group, kind) := {"request": {"kind": {"group": group, "version": "v1", "kind": kind}, "operation": "CREATE"}}

test_every_pod_carrier_has_its_spec_path if {
	template := ["spec", "template", "spec"]
	cases := [
		["", "Pod", ["spec"]],
		["", "PodTemplate", ["template", "spec"]],
		["", "ReplicationController", template],
		["apps", "ReplicaSet", template],
		["apps", "Deployment", template],
		["apps", "StatefulSet", template],
		["apps", "DaemonSet", template],
		["batch", "Job", template],
		["batch", "CronJob", ["spec", "jobTemplate", "spec", "template", "spec"]],
	]
	every c in cases {
		podspec.path == c[2] with input as _input(c[0], c[1])
	}
}

test_other_kinds_carry_no_pod_spec if {
	every k in [["", "Service"], ["", "Namespace"], ["apps", "Pod"], ["batch", "Deployment"]] {
		not podspec.carries_pod_spec with input as _input(k[0], k[1])
	}
}

_replica_set(owners) := {"request": {
	"kind": {"group": "apps", "version": "v1", "kind": "ReplicaSet"},
	"operation": "CREATE",
	"object": {"metadata": {"name": "web-5d8f", "ownerReferences": owners}, "spec": {"template": {"spec": {}}}},
}}

test_a_replica_set_a_controller_owns_is_told_apart if {
	deployment := {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u", "controller": true}
	podspec.controlled_replica_set with input as _replica_set([deployment])
	podspec.controlled_replica_set with input as _replica_set([{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "web", "uid": "u", "controller": true}])
	not podspec.controlled_replica_set with input as _replica_set([])
	not podspec.controlled_replica_set with input as _replica_set([object.remove(deployment, ["controller"])])
	not podspec.controlled_replica_set with input as _replica_set([object.union(deployment, {"controller": false})])
	not podspec.controlled_replica_set with input as json.patch(_replica_set([deployment]), [{"op": "replace", "path": "/request/kind/kind", "value": "Deployment"}])
}
