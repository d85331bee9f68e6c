package tenantguard.rules.priority_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.rules.priority

_eval(inp) := {"violations": v, "mutations": m} if {
	v := priority.violations with input as inp with data.tenantguard.registry as f.registry
	m := priority.mutations with input as inp with data.tenantguard.registry as f.registry
}

test_allowed_class_passes if {
	r := _eval(f.request("CREATE", f.pod({"priorityClassName": "tenant-high", "containers": [f.container({})]})))
	count(r.violations) == 0
	count(r.mutations) == 0
}

test_other_class_is_denied if {
	r := _eval(f.request("CREATE", f.pod({"priorityClassName": "system-node-critical"})))
	r.violations == {{"id": "priority-class", "msg": "PriorityClass \"system-node-critical\" is not allowed for tenant \"oil\"; allowed: tenant-high, tenant-low"}}
}

test_class_in_a_deployment_template_is_denied if {
	obj := {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"priorityClassName": "x"}}}}
	r := _eval(f.request_for("apps", "Deployment", "deployments", "CREATE", obj))
	{v.id | some v in r.violations} == {"priority-class"}
}

test_pod_without_class_gets_default_and_its_value if {
	inp := object.union(f.request("CREATE", f.pod({"containers": [f.container({})]})), {"cluster": {"priorityClasses": {"tenant-low": {"priority": 100, "preemptionPolicy": "Never"}}}})
	r := _eval(inp)
	r.mutations == {
		{"op": "add", "path": "/spec/priorityClassName", "value": "tenant-low"},
		{"op": "add", "path": "/spec/priority", "value": 100},
		{"op": "add", "path": "/spec/preemptionPolicy", "value": "Never"},
	}
}

test_template_without_class_gets_default_name_only if {
	obj := {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {}}}}
	inp := object.union(f.request_for("apps", "Deployment", "deployments", "CREATE", obj), {"cluster": {"priorityClasses": {"tenant-low": {"priority": 100}}}})
	r := _eval(inp)
	r.mutations == {{"op": "add", "path": "/spec/template/spec/priorityClassName", "value": "tenant-low"}}
}

test_update_does_not_set_default if {
	old := f.pod({"containers": [f.container({})]})
	r := _eval(f.update(old, old))
	count(r.mutations) == 0
}

test_unrestricted_tenant_is_left_alone if {
	inp := f.in_namespace(f.request("CREATE", f.pod({"priorityClassName": "anything"})), "gas-a", "gas")
	r := _eval(inp)
	count(r.violations) == 0
	count(r.mutations) == 0
}

test_a_pod_whose_default_class_is_not_known_yet_loses_the_plugins_values if {
	pod := f.pod({"priority": 0, "preemptionPolicy": "PreemptLowerPriority", "containers": [f.container({})]})
	r := _eval(f.request("CREATE", pod))
	r.mutations == {
		{"op": "add", "path": "/spec/priorityClassName", "value": "tenant-low"},
		{"op": "remove", "path": "/spec/priority"},
		{"op": "remove", "path": "/spec/preemptionPolicy"},
	}
}

test_a_resize_does_not_judge_the_class_again if {
	old := f.pod({"priorityClassName": "legacy-high", "containers": [f.container({"resources": {"requests": {"cpu": "1"}}})]})
	resized := json.patch(old, [{"op": "replace", "path": "/spec/containers/0/resources/requests/cpu", "value": "2"}])
	count(_eval(object.union(f.update(old, resized), {"request": {"subResource": "resize"}})).violations) == 0
	{v.id | some v in _eval(f.update(old, resized)).violations} == {"priority-class"}
}
