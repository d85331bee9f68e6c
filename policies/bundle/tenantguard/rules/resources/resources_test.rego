package tenantguard.rules.resources_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.rules.resources

_msgs(inp) := {v.msg | some v in vs} if {
	vs := resources.violations with input as inp with data.tenantguard.registry as f.registry
}

# facts in thousandths of a CPU, bytes and objects; the room left is the
# fixture tenant oil's hard limit less what is used
_hard := {"requests.cpu": 2000, "limits.memory": 4294967296, "requests.storage": 107374182400, "requests.nvidia.com/gpu": 4}

_with(inp, adds, used) := object.union(inp, {"cluster": {"resources": {
	"adds": adds, "used": used, "namespaces": 2,
	"room": {k: left | some k, n in used; left := _hard[k] - n},
}}})

_named := f.container({"resources": {"requests": {"cpu": "600m"}, "limits": {"memory": "1Gi"}}})

_pod := f.pod({"containers": [_named]})

test_a_pod_within_the_room_passes if {
	count(_msgs(_with(f.request("CREATE", _pod), {"requests.cpu": 600}, {"requests.cpu": 1400}))) == 0
}

test_a_pod_over_the_sum_is_refused_with_the_amounts if {
	_msgs(_with(f.request("CREATE", _pod), {"requests.cpu": 600}, {"requests.cpu": 1500})) == {`tenant "oil" would use requests.cpu 2100m of its 2; Pod "web" asks for 600m and 1500m is in use across 2 namespaces; it may ask for at most 500m, or the tenant's quota must be raised`}
}

test_a_full_tenant_is_told_nothing_is_left if {
	_msgs(_with(f.request("CREATE", _pod), {"limits.memory": 1073741824}, {"limits.memory": 4294967296})) == {`tenant "oil" would use limits.memory 5Gi of its 4Gi; Pod "web" asks for 1Gi and 4Gi is in use across 2 namespaces; nothing is left: free some or ask for a higher quota`}
}

test_a_resize_asks_for_more if {
	inp := object.union(f.update(_pod, _pod), {"request": {"subResource": "resize"}})
	_msgs(_with(inp, {"requests.cpu": 250}, {"requests.cpu": 1900})) == {`tenant "oil" would use requests.cpu 2150m of its 2; Pod "web" asks for 250m more and 1900m is in use across 2 namespaces; it may ask for at most 100m, or the tenant's quota must be raised`}
}

test_a_claim_and_a_device_count_in_their_units if {
	claim := {"kind": "PersistentVolumeClaim", "metadata": {"name": "data"}}
	_msgs(_with(f.request("CREATE", claim), {"requests.storage": 10737418240}, {"requests.storage": 102005473280})) == {`tenant "oil" would use requests.storage 105Gi of its 100Gi; PersistentVolumeClaim "data" asks for 10Gi and 95Gi is in use across 2 namespaces; it may ask for at most 5Gi, or the tenant's quota must be raised`}
	_msgs(_with(f.request("CREATE", _pod), {"requests.nvidia.com/gpu": 2}, {"requests.nvidia.com/gpu": 3})) == {`tenant "oil" would use requests.nvidia.com/gpu 5 of its 4; Pod "web" asks for 2 and 3 is in use across 2 namespaces; it may ask for at most 1, or the tenant's quota must be raised`}
}

test_keys_the_tenant_does_not_limit_are_not_judged if {
	# facts that would refuse the pod, for a key oil's registry entry does not limit
	facts := {"adds": {"limits.cpu": 1000}, "used": {"limits.cpu": 5000}, "room": {"limits.cpu": -5000}, "namespaces": 2}
	count(_msgs(object.union(f.request("CREATE", _pod), {"cluster": {"resources": facts}}))) == 0

	# and the same facts for a key it limits do
	limited := {"adds": {"requests.cpu": 1000}, "used": {"requests.cpu": 5000}, "room": {"requests.cpu": -3000}, "namespaces": 2}
	count(_msgs(object.union(f.request("CREATE", _pod), {"cluster": {"resources": limited}}))) == 1
}

test_a_pod_leaving_a_limited_request_unnamed_is_refused if {
	pod := f.pod({"initContainers": [{"name": "init"}], "containers": [_named, {"name": "log", "resources": {"limits": {"cpu": "1"}}}]})
	_msgs(f.request("CREATE", pod)) == {
		`Pod "web" must name requests.cpu for its containers "init": tenant "oil" has a quota on requests.cpu, which counts only what containers name; set resources.requests.cpu in each`,
		`Pod "web" must name limits.memory for its containers "init", "log": tenant "oil" has a quota on limits.memory, which counts only what containers name; set resources.limits.memory in each`,
	}
}

test_a_limit_is_named_by_a_limit_only if {
	pod := f.pod({"containers": [f.container({"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}})]})
	_msgs(f.request("CREATE", pod)) == {`Pod "web" must name limits.memory for its containers "app": tenant "oil" has a quota on limits.memory, which counts only what containers name; set resources.limits.memory in each`}
}

test_a_pod_with_resources_at_pod_level_need_not_name_them_per_container if {
	count(_msgs(f.request("CREATE", _pod_level_pod({"requests": {"cpu": "500m"}})))) == 0
	count(_msgs(f.request("CREATE", _pod_level_pod({"limits": {"memory": "1Gi"}})))) == 0
	count(_msgs(f.request("CREATE", _pod_level_pod({"requests": {"hugepages-2Mi": "4Mi"}})))) == 0

	# a resource that cannot be set at pod level leaves the containers to name theirs
	count(_msgs(f.request("CREATE", _pod_level_pod({"requests": {"ephemeral-storage": "1Gi"}})))) == 2
	count(_msgs(f.request("CREATE", _pod_level_pod({})))) == 2
}

_pod_level_pod(resources) := f.pod({"resources": resources, "containers": [f.container({}), {"name": "log"}]})

test_other_tenants_and_updates_are_not_asked_to_name_requests if {
	pod := f.pod({"containers": [f.container({})]})
	count(_msgs(f.in_namespace(f.request("CREATE", pod), "gas-dev", "gas"))) == 0
	count(_msgs(f.update(pod, pod))) == 0
}

test_quantities_read_as_people_write_them if {
	resources.quantity("requests.cpu", 2000) == "2"
	resources.quantity("cpu", 1) == "1m"
	resources.quantity("requests.memory", 1536 * 1048576) == "1536Mi"
	resources.quantity("requests.ephemeral-storage", 1000) == "1000"
	resources.quantity("requests.storage", 0) == "0"
}
