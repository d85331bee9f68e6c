package tenantguard.rules.nodes_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.rules.nodes

_toleration := {"key": "pool", "operator": "Equal", "value": "oil", "effect": "NoSchedule"}

_policy := {"nodeSelector": {"pool": "oil", "example.com/zone": "a"}, "tolerations": [_toleration], "allowNodeName": false}

_eval(inp) := {"violations": v, "mutations": m} if {
	reg := object.union(f.registry, {"tenants": {"oil": {"nodePlacement": _policy}}})
	v := nodes.violations with input as inp with data.tenantguard.registry as reg
	m := nodes.mutations with input as inp with data.tenantguard.registry as reg
}

test_a_bare_pod_is_placed_on_the_tenant_nodes if {
	r := _eval(f.request("CREATE", f.pod({"containers": [f.container({})]})))
	count(r.violations) == 0
	r.mutations == {
		{"op": "add", "path": "/spec/nodeSelector", "value": {"pool": "oil", "example.com/zone": "a"}},
		{"op": "add", "path": "/spec/tolerations", "value": [_toleration]},
	}
}

test_missing_keys_and_tolerations_are_merged if {
	spec := {
		"nodeSelector": {"disk": "ssd", "pool": "oil"},
		"tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
		"containers": [f.container({})],
	}
	obj := {"kind": "Deployment", "metadata": {"name": "web"}, "spec": {"template": {"spec": spec}}}
	r := _eval(f.request_for("apps", "Deployment", "deployments", "CREATE", obj))
	count(r.violations) == 0
	r.mutations == {
		{"op": "add", "path": "/spec/template/spec/nodeSelector/example.com~1zone", "value": "a"},
		{"op": "add", "path": "/spec/template/spec/tolerations/-", "value": _toleration},
	}
}

test_a_pod_that_has_everything_needs_no_patch if {
	spec := {
		"nodeSelector": {"pool": "oil", "example.com/zone": "a"},
		"tolerations": [{"key": "pool", "value": "oil", "effect": "NoSchedule"}],
	}
	r := _eval(f.request("CREATE", f.pod(spec)))
	count(r.violations) == 0
	count(r.mutations) == 0
}

test_another_pool_is_refused_naming_the_key if {
	obj := {"kind": "Job", "metadata": {"name": "etl"}, "spec": {"template": {"spec": {"nodeSelector": {"pool": "gas"}}}}}
	r := _eval(f.request_for("batch", "Job", "jobs", "CREATE", obj))
	r.violations == {{"id": "node-placement", "msg": "Job \"etl\" sets nodeSelector pool=\"gas\", but the pods of tenant \"oil\" run on the nodes with pool=\"oil\"; remove the key or set it to \"oil\""}}
}

test_a_template_update_to_another_pool_is_refused if {
	old := {"kind": "Deployment", "metadata": {"name": "web"}, "spec": {"template": {"spec": {"nodeSelector": {"pool": "oil"}}}}}
	new := json.patch(old, [{"op": "replace", "path": "/spec/template/spec/nodeSelector/pool", "value": "gas"}])
	inp := object.union(f.request_for("apps", "Deployment", "deployments", "UPDATE", new), {"request": {"oldObject": old}})
	{v.id | some v in _eval(inp).violations} == {"node-placement"}
	count(_eval(inp).mutations) == 0
}

test_node_name_is_refused_unless_allowed if {
	inp := f.request("CREATE", f.pod({"nodeName": "node-7", "nodeSelector": {"pool": "oil", "example.com/zone": "a"}}))
	_eval(inp).violations == {{"id": "node-placement", "msg": "Pod \"web\" sets nodeName \"node-7\", which skips the scheduler and is not allowed for tenant \"oil\"; remove it and let the tenant's nodeSelector place the pod"}}
	allowed := object.union(f.registry, {"tenants": {"oil": {"nodePlacement": object.union(_policy, {"allowNodeName": true})}}})
	count(nodes.violations) == 0 with input as inp with data.tenantguard.registry as allowed
}

test_pod_updates_are_not_judged if {
	old := f.pod({"nodeSelector": {"pool": "gas"}, "containers": [f.container({})]})
	new := json.patch(old, [{"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:2"}])
	r := _eval(f.update(old, new))
	count(r.violations) == 0
	count(r.mutations) == 0
}

test_a_null_selector_is_replaced if {
	r := _eval(f.request("CREATE", f.pod({"nodeSelector": null, "tolerations": null})))
	count(r.mutations) == 2
}

test_unrestricted_tenants_are_left_alone if {
	r := _eval(f.in_namespace(f.request("CREATE", f.pod({"nodeName": "n", "nodeSelector": {"pool": "x"}})), "gas-a", "gas"))
	count(r.violations) == 0
	count(r.mutations) == 0
}
