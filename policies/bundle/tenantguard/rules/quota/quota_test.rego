package tenantguard.rules.quota_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.rules.quota

_msgs(inp) := {v.msg | some v in vs} if {
	vs := quota.violations with input as inp with data.tenantguard.registry as f.registry
}

_with_counts(inp, counts) := object.union(inp, {"cluster": {"counts": {"oil": counts}}})

test_create_below_the_limit_passes if {
	count(_msgs(_with_counts(f.request("CREATE", f.pod({})), {"pods": 19}))) == 0
}

test_create_at_the_limit_is_denied if {
	_msgs(_with_counts(f.request("CREATE", f.pod({})), {"pods": 20})) == {"tenant \"oil\" already has 20 of its 20 allowed pods across its namespaces; delete some first or ask for a higher quota"}
}

test_grouped_resources_use_count_keys if {
	obj := {"kind": "Deployment", "metadata": {"name": "d"}}
	inp := _with_counts(f.request_for("apps", "Deployment", "deployments", "CREATE", obj), {"count/deployments.apps": 2})
	_msgs(inp) == {"tenant \"oil\" already has 2 of its 2 allowed count/deployments.apps across its namespaces; delete some first or ask for a higher quota"}
}

test_updates_and_subresources_are_not_counted if {
	count(_msgs(_with_counts(f.update(f.pod({}), f.pod({})), {"pods": 20}))) == 0
	inp := object.union(_with_counts(f.request("CREATE", f.pod({})), {"pods": 20}), {"request": {"subResource": "binding"}})
	count(_msgs(inp)) == 0
}

test_unlisted_resources_are_unlimited if {
	count(_msgs(_with_counts(f.request("CREATE", {"kind": "ConfigMap", "metadata": {"name": "c"}}), {"configmaps": 1000}))) == 0
}
