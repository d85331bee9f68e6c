package tenantguard.main_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.main

_decision(inp, registry) := d if {
	d := main.decision with input as inp with data.tenantguard.registry as registry
}

test_pods_are_routed_to_every_pod_family if {
	main.families == ["pods", "priority", "storage", "quota", "managed"] with input as f.request("CREATE", f.pod({}))
}

test_every_kind_is_routed_to_its_families if {
	pod := ["pods", "priority", "storage", "quota", "managed"]
	cases := [
		["", "Namespace", ["namespaces"]],
		["", "PersistentVolumeClaim", ["storage", "quota", "managed"]],
		["", "Service", ["services", "quota", "managed"]],
		["", "Pod", pod],
		["", "PodTemplate", pod],
		["", "ReplicationController", pod],
		["apps", "ReplicaSet", pod],
		["apps", "Deployment", pod],
		["apps", "StatefulSet", pod],
		["apps", "DaemonSet", pod],
		["batch", "Job", pod],
		["batch", "CronJob", pod],
		["", "ConfigMap", ["quota", "managed"]],
		["apps", "Pod", ["quota", "managed"]],
	]
	every c in cases {
		main.families == c[2] with input as {"request": {"kind": {"group": c[0], "version": "v1", "kind": c[1]}, "operation": "CREATE"}}
	}
}

test_unknown_kinds_only_get_quota_and_managed if {
	main.families == ["quota", "managed"] with input as f.request("CREATE", {"kind": "ConfigMap", "metadata": {"name": "c"}})
}

test_every_reason_is_returned if {
	inp := f.request("CREATE", f.pod({"hostNetwork": true, "priorityClassName": "x", "containers": [f.container({"securityContext": {"privileged": true}})]}))
	d := _decision(inp, f.registry)
	d.allowed == false
	{v.id | some v in d.deny} == {"host-network", "priority-class", "privileged"}
	d.warn == []
	d.dryrun == []
}

test_enforcement_modes_split_the_violations if {
	registry := json.patch(f.registry, [{"op": "replace", "path": "/settings/enforcement", "value": {"host-network": "warn", "privileged": "dryrun"}}])
	inp := f.request("CREATE", f.pod({"hostNetwork": true, "containers": [f.container({"securityContext": {"privileged": true}})]}))
	d := _decision(inp, registry)
	d.allowed == true
	[v.id | some v in d.warn] == ["host-network"]
	[v.id | some v in d.dryrun] == ["privileged"]
}

test_clean_request_is_allowed if {
	d := _decision(f.request("CREATE", f.pod({"priorityClassName": "tenant-low", "containers": [f.container({})]})), f.registry)
	d == {"allowed": true, "deny": [], "warn": [], "dryrun": []}
}

test_mutations_are_collected_across_families if {
	inp := f.request("CREATE", f.pod({"containers": [f.container({})], "volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]}))
	m := main.mutations with input as inp with data.tenantguard.registry as f.registry
	m == [
		{"op": "add", "path": "/spec/priorityClassName", "value": "tenant-low"},
		{"op": "add", "path": "/spec/volumes/0/ephemeral/volumeClaimTemplate/spec/storageClassName", "value": "standard"},
	]
}
