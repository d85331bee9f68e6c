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
