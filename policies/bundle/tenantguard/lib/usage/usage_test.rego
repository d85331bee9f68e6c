package tenantguard.lib.usage_test

import data.tenantguard.lib.usage

_ctr(name, requests, limits) := {"name": name, "resources": {"requests": requests, "limits": limits}}

test_containers_are_summed_requests_and_limits_apart if {
	usage.pod({"spec": {"containers": [
		_ctr("a", {"cpu": "100m", "memory": "64Mi"}, {"cpu": "200m"}),
		_ctr("b", {"cpu": "300m", "memory": "64Mi"}, {"cpu": "1"}),
	]}}) == {"requests.cpu": 400, "limits.cpu": 1200, "requests.memory": 134217728}
}

test_an_init_container_asking_for_more_sets_the_request if {
	usage.pod({"spec": {
		"initContainers": [_ctr("migrate", {"cpu": "2"}, {})],
		"containers": [_ctr("app", {"cpu": "500m"}, {})],
	}}) == {"requests.cpu": 2000}
}

test_a_native_sidecar_counts_with_the_containers_and_beside_a_later_init_container if {
	usage.pod({"spec": {
		"initContainers": [
			object.union(_ctr("proxy", {"cpu": "100m"}, {}), {"restartPolicy": "Always"}),
			_ctr("migrate", {"cpu": "1"}, {}),
		],
		"containers": [_ctr("app", {"cpu": "500m"}, {})],
	}}) == {"requests.cpu": 1100}
}

test_amounts_are_exact_where_binary_floating_point_is_not if {
	every q, want in {"501m": 501, "253m": 253, "1002m": 1002, "2003m": 2003, "0.501": 501, "100m": 100, "1.5": 1500} {
		usage.amount("requests.cpu", q) == want
	}
	usage.amount("requests.memory", "0.3G") == 300000000
}

test_amounts_below_the_unit_round_up_as_kubernetes_rounds_them if {
	usage.amount("requests.cpu", "0.0001") == 1
	usage.amount("requests.cpu", "0.0010001") == 2
	usage.amount("requests.cpu", "100u") == 1
	usage.amount("requests.cpu", "2500000n") == 3
	usage.amount("requests.memory", "1500m") == 2
}

test_hugepages_at_pod_level_replace_the_containers if {
	usage.pod({"spec": {
		"resources": {"requests": {"hugepages-2Mi": "8Mi"}, "limits": {"hugepages-2Mi": "8Mi"}},
		"containers": [_ctr("app", {"hugepages-2Mi": "4Mi"}, {"hugepages-2Mi": "4Mi"})],
	}}) == {"requests.hugepages-2Mi": 8388608}
}

test_overhead_of_a_resource_no_container_names_is_a_request if {
	usage.pod({"spec": {"overhead": {"cpu": "250m"}, "containers": [_ctr("app", {"memory": "1Gi"}, {})]}}) == {"requests.cpu": 250, "requests.memory": 1073741824}
}

test_overhead_is_added if {
	usage.pod({"spec": {"overhead": {"memory": "64Mi"}, "containers": [_ctr("app", {"memory": "1Gi"}, {"memory": "1Gi"})]}}) == {"requests.memory": 1140850688, "limits.memory": 1140850688}
}

test_extended_resources_and_hugepages_count_as_requests if {
	usage.pod({"spec": {"containers": [_ctr("gpu", {"nvidia.com/gpu": "2", "hugepages-2Mi": "4Mi"}, {"nvidia.com/gpu": "2", "hugepages-2Mi": "4Mi"})]}}) == {"requests.nvidia.com/gpu": 2, "requests.hugepages-2Mi": 4194304}
}

test_limits_only_count_as_requests_too if {
	usage.pod({"spec": {"containers": [_ctr("app", {}, {"cpu": "1"})]}}) == {"requests.cpu": 1000, "limits.cpu": 1000}
}

test_a_resize_counts_as_soon_as_asked_and_a_shrink_once_done if {
	usage.pod({
		"spec": {"containers": [_ctr("app", {"cpu": "2"}, {})]},
		"status": {"containerStatuses": [{"name": "app", "allocatedResources": {"cpu": "1"}}]},
	}) == {"requests.cpu": 2000}
	usage.pod({
		"spec": {"containers": [_ctr("app", {"cpu": "1"}, {})]},
		"status": {"containerStatuses": [{"name": "app", "allocatedResources": {"cpu": "2"}}]},
	}) == {"requests.cpu": 2000}
}

test_a_resize_in_flight_counts_the_larger_sum_of_spec_and_status_not_of_each_container if {
	usage.pod({
		"spec": {"containers": [_ctr("a", {"cpu": "1"}, {"cpu": "4"}), _ctr("b", {"cpu": "3"}, {"cpu": "3"})]},
		"status": {"containerStatuses": [
			{"name": "a", "allocatedResources": {"cpu": "2"}, "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}},
			{"name": "b", "allocatedResources": {"cpu": "2"}, "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "5"}}},
		]},
	}) == {"requests.cpu": 4000, "limits.cpu": 7000}
}

test_a_resize_found_infeasible_counts_what_the_status_holds if {
	usage.pod({
		"spec": {"containers": [_ctr("a", {"cpu": "8"}, {"cpu": "8"}), _ctr("b", {"cpu": "1"}, {})]},
		"status": {
			"conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}],
			"containerStatuses": [{"name": "a", "allocatedResources": {"cpu": "1"}, "resources": {"limits": {"cpu": "1"}}}],
		},
	}) == {"requests.cpu": 1000, "limits.cpu": 1000}
}

test_pod_level_resources_replace_the_containers if {
	usage.pod({"spec": {"resources": {"requests": {"cpu": "3"}}, "containers": [_ctr("app", {"cpu": "1"}, {})]}}) == {"requests.cpu": 3000}
}

test_a_finished_pod_counts_nothing if {
	usage.pod({"spec": {"containers": [_ctr("app", {"cpu": "1"}, {})]}, "status": {"phase": "Succeeded"}}) == {}
}

test_a_pod_past_the_grace_period_of_its_deletion_counts_nothing if {
	# deleted at 2026-01-01T00:00:00Z with 30 s of grace: 29 s and 31 s later
	usage.pod(_deleting) == {"requests.cpu": 1000} with time.now_ns as 1767225629000000000
	usage.pod(_deleting) == {} with time.now_ns as 1767225631000000000
}

_deleting := {
	"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30},
	"spec": {"containers": [_ctr("app", {"cpu": "1"}, {})]},
}

test_a_claim_counts_its_storage_in_total_and_per_class if {
	usage.claim({"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "10Gi"}}}}) == {
		"requests.storage": 10737418240,
		"fast.storageclass.storage.k8s.io/requests.storage": 10737418240,
		"fast.storageclass.storage.k8s.io/persistentvolumeclaims": 1,
	}
	usage.claim({
		"metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
		"spec": {"resources": {"requests": {"storage": "1Gi"}}},
		"status": {"allocatedResources": {"storage": "2Gi"}},
	})["old.storageclass.storage.k8s.io/requests.storage"] == 2147483648
}

test_a_resource_claim_counts_its_devices_per_class_as_the_quota_evaluator_does if {
	usage.device_claim({"spec": {"devices": {"requests": [
		{"name": "a", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 2}},
		{"name": "b", "exactly": {"deviceClassName": "gpu"}},
		{"name": "c", "exactly": {"deviceClassName": "nic", "allocationMode": "All"}},
		{"name": "d", "firstAvailable": [
			{"name": "big", "deviceClassName": "gpu", "count": 4},
			{"name": "small", "deviceClassName": "gpu", "count": 1},
			{"name": "fpga", "deviceClassName": "fpga", "count": 2},
		]},
		{"name": "e", "exactly": {"deviceClassName": "tpu", "allocationMode": "Later"}},
	]}}}) == {
		"gpu.deviceclass.resource.k8s.io/devices": 7,
		"nic.deviceclass.resource.k8s.io/devices": 32,
		"fpga.deviceclass.resource.k8s.io/devices": 2,
	}
	usage.device_claim({"spec": {"devices": {}}}) == {}
	usage.summed("gpu.deviceclass.resource.k8s.io/devices") == "resourceclaims"
	usage.summed("fast.storageclass.storage.k8s.io/requests.storage") == "persistentvolumeclaims"
	usage.summed("requests.nvidia.com/gpu") == "pods"
}

test_a_resource_claim_created_adds_its_devices if {
	claim := {"spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu", "count": 3}}]}}}
	request := {"kind": {"group": "resource.k8s.io", "kind": "ResourceClaim"}, "operation": "CREATE", "object": claim}
	usage.counted(request)
	usage.adds(request, {"gpu.deviceclass.resource.k8s.io/devices": "4", "requests.cpu": "1"}) == {"gpu.deviceclass.resource.k8s.io/devices": 3}
	usage.total("gpu.deviceclass.resource.k8s.io/devices", [claim, claim]) == 6
	not usage.counted(object.union(request, {"operation": "UPDATE"}))
	not usage.counted(object.union(request, {"kind": {"group": "example.com", "kind": "ResourceClaim"}}))
}

test_adds_are_the_amounts_that_grow_by_the_quota_names if {
	old := {"spec": {"containers": [_ctr("app", {"cpu": "500m", "memory": "1Gi"}, {})]}}
	new := {"spec": {"containers": [_ctr("app", {"cpu": "800m", "memory": "512Mi"}, {})]}}
	request := {"kind": {"kind": "Pod"}, "operation": "UPDATE", "subResource": "resize", "object": new, "oldObject": old}
	usage.counted(request)
	usage.adds(request, {"cpu": "2", "requests.memory": "4Gi"}) == {"cpu": 300}
}

test_a_resize_after_one_found_infeasible_adds_what_it_asks if {
	status := {
		"conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}],
		"containerStatuses": [{"name": "app", "allocatedResources": {"cpu": "500m"}}],
	}
	old := {"spec": {"containers": [_ctr("app", {"cpu": "64"}, {})]}, "status": status}
	new := {"spec": {"containers": [_ctr("app", {"cpu": "2"}, {})]}, "status": status}
	request := {"kind": {"kind": "Pod"}, "operation": "UPDATE", "subResource": "resize", "object": new, "oldObject": old}
	usage.adds(request, {"requests.cpu": "4"}) == {"requests.cpu": 1500}
}

test_facts_sum_the_tenants_pods_and_claims if {
	request := {"kind": {"kind": "Pod"}, "operation": "CREATE", "object": {"spec": {"containers": [_ctr("app", {"cpu": "600m"}, {})]}}}
	pods := [
		{"spec": {"containers": [_ctr("a", {"cpu": "1"}, {})]}},
		{"spec": {"containers": [_ctr("b", {"cpu": "500m"}, {})]}},
		{"spec": {"containers": [_ctr("c", {"cpu": "9"}, {})]}, "status": {"phase": "Failed"}},
	]
	added := usage.adds(request, {"requests.cpu": "2", "requests.storage": "1Gi"})
	added == {"requests.cpu": 600}
	usage.facts(added, {"requests.cpu": usage.total("requests.cpu", pods)}, {"requests.cpu": "2"}, 2) == {"adds": {"requests.cpu": 600}, "used": {"requests.cpu": 1500}, "room": {"requests.cpu": 500}, "namespaces": 2}
	usage.total("fast.storageclass.storage.k8s.io/requests.storage", [{"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}}}]) == 1073741824
}

test_facts_hold_only_the_keys_a_request_would_take_over_their_limit if {
	added := {"requests.cpu": 600, "requests.memory": 1073741824}
	totals := {"requests.cpu": 1500, "requests.memory": 1073741824}
	usage.facts(added, totals, {"requests.cpu": "2", "requests.memory": "4Gi"}, 2) == {"adds": {"requests.cpu": 600}, "used": {"requests.cpu": 1500}, "room": {"requests.cpu": 500}, "namespaces": 2}
	not usage.facts(added, totals, {"requests.cpu": "3", "requests.memory": "4Gi"}, 2)
	not usage.facts({"requests.cpu": 500}, {"requests.cpu": 1500}, {"requests.cpu": "2"}, 2)
}

test_other_requests_are_not_counted if {
	not usage.counted({"kind": {"kind": "Pod"}, "operation": "UPDATE", "object": {}})
	not usage.counted({"kind": {"group": "apps", "kind": "Deployment"}, "operation": "CREATE", "object": {}})
}
