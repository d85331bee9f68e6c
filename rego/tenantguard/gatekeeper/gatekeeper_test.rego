package tenantguard.gatekeeper_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.gatekeeper

_ns(name, tenant) := {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"tenantguard.io/tenant": tenant}}}

_pods(n) := {sprintf("p%d", [i]): {"metadata": {"name": sprintf("p%d", [i])}, "status": {"phase": "Running"}} | some i in numbers.range(1, n)}

# Gatekeeper's inventory: oil-dev and oil-prod with 19 running pods and a
# finished one between them
_inventory := {
	"cluster": {"v1": {"Namespace": {"oil-dev": _ns("oil-dev", "oil"), "oil-prod": _ns("oil-prod", "oil")}}},
	"namespace": {
		"oil-dev": {"v1": {"Pod": _pods(10)}},
		"oil-prod": {"v1": {"Pod": object.union(_pods(9), {"done": {"status": {"phase": "Succeeded"}}})}},
	},
}

_params(rules) := {"rules": rules, "registry": f.registry, "managers": ["system:serviceaccount:tenantguard-system:tenantguard"]}

# the input Gatekeeper builds from an AdmissionRequest and a Constraint
_input(inp, rules) := {"review": inp.request, "parameters": _params(rules)}

_violations(family, inp, rules, inventory) := result if {
	result := _msgs(gatekeeper.violations(family)) with input as _input(inp, rules)
		with data.inventory as inventory
}

# the messages of violations, each {"rule", "msg"}
_msgs(violations) := {v.msg |
	some v in violations
	startswith(v.msg, sprintf("[%s] ", [v.rule]))
}

test_a_pod_is_judged_by_its_namespace_in_the_inventory if {
	inp := f.request("CREATE", f.pod({"hostNetwork": true}))
	msgs := _violations("pods", inp, ["host-network"], _inventory)
	count(msgs) == 1
	some msg in msgs
	startswith(msg, `[host-network] hostNetwork of Pod "web" is not allowed for tenant "oil"`)
}

test_only_the_rules_the_constraint_names_are_reported if {
	inp := f.request("CREATE", f.pod({"hostNetwork": true, "hostPID": true}))
	msgs := _violations("pods", inp, ["host-namespaces"], _inventory)
	count(msgs) == 1
	some msg in msgs
	startswith(msg, "[host-namespaces] hostPID ")
}

test_the_review_namespace_object_wins_over_a_stale_inventory if {
	inp := f.request("CREATE", f.pod({"hostNetwork": true}))
	review := object.union(inp.request, {"namespaceObject": {"metadata": {"name": "oil-dev", "labels": {}}}})
	msgs := _msgs(gatekeeper.violations("pods")) with input as {"review": review, "parameters": _params(["host-network"])}
		with data.inventory as _inventory
	count(msgs) == 0
}

test_the_tenant_quota_counts_the_inventory if {
	inp := f.request("CREATE", f.pod({}))
	count(_violations("quota", inp, ["tenant-quota"], _inventory)) == 0
	full := json.patch(_inventory, [{"op": "add", "path": "/namespace/oil-dev/v1/Pod/p11", "value": {}}])
	msgs := _violations("quota", inp, ["tenant-quota"], full)
	some msg in msgs
	startswith(msg, `[tenant-quota] tenant "oil" already has 20 of its 20 allowed pods`)
}

test_namespaces_are_counted_from_the_inventory if {
	registry := json.patch(f.registry, [{"op": "replace", "path": "/tenants/oil/namespaceQuota", "value": 2}])
	inp := f.request_for("", "Namespace", "namespaces", "CREATE", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "oil-third"}})
	msgs := _msgs(gatekeeper.violations("namespaces")) with input as {"review": inp.request, "parameters": object.union(_params(["namespace-quota"]), {"registry": registry})}
		with data.inventory as _inventory
	some msg in msgs
	startswith(msg, `[namespace-quota] tenant "oil" already has 2 of its 2 allowed namespaces`)
}

test_a_delete_is_judged_on_the_old_object_only if {
	companion := {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"app.kubernetes.io/managed-by": "tenantguard"}}}
	inp := f.request("DELETE", companion)

	# Gatekeeper copies oldObject into object on DELETE
	review := object.union(inp.request, {"object": companion, "oldObject": companion})
	msgs := _msgs(gatekeeper.violations("managed")) with input as {"review": review, "parameters": _params(["managed-resource"])}
		with data.inventory as _inventory
	some msg in msgs
	contains(msg, "cannot be deleted")
}

test_tenantguard_itself_may_change_its_companions if {
	companion := {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"app.kubernetes.io/managed-by": "tenantguard"}}}
	inp := f.as_user(f.request("UPDATE", companion), f.user("system:serviceaccount:tenantguard-system:tenantguard"))
	review := object.union(inp.request, {"oldObject": companion})
	msgs := _msgs(gatekeeper.violations("managed")) with input as {"review": review, "parameters": _params(["managed-resource"])}
		with data.inventory as _inventory
	count(msgs) == 0
}

_namespace_create(name, labels) := f.request_for("", "Namespace", "namespaces", "CREATE", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})

test_an_owner_must_label_her_namespace_where_no_webhook_does if {
	msgs := _msgs(gatekeeper.violations("namespaces")) with input as {"review": _namespace_create("oil-new", {}).request, "parameters": _params(["namespace-ownership"])}
		with data.inventory as _inventory
	msgs == {`[namespace-ownership] namespace "oil-new" is for tenant "oil" and must say so: set the label "tenantguard.io/tenant: oil" (no tenantguard webhook adds it here)`}
}

test_a_labelled_namespace_of_her_tenant_passes if {
	msgs := _msgs(gatekeeper.violations("namespaces")) with input as {"review": _namespace_create("oil-new", {"tenantguard.io/tenant": "oil"}).request, "parameters": _params(["namespace-ownership"])}
		with data.inventory as _inventory
	count(msgs) == 0
}

test_a_namespace_outside_tenants_needs_no_label if {
	inp := f.as_user(_namespace_create("tools", {}), f.user("bob"))
	msgs := _msgs(gatekeeper.violations("namespaces")) with input as {"review": inp.request, "parameters": _params(["namespace-ownership"])}
		with data.inventory as _inventory
	count(msgs) == 0
}

test_a_hostname_collision_is_found_in_the_inventory if {
	registry := json.patch(f.registry, [{"op": "add", "path": "/tenants/oil/ingress", "value": {"hostnameCollision": "tenant"}}])
	inventory := json.patch(_inventory, [
		{"op": "add", "path": "/cluster/v1/Namespace/gas-apps", "value": _ns("gas-apps", "gas")},
		{"op": "add", "path": "/namespace/gas-apps", "value": {"gateway.networking.k8s.io/v1": {"HTTPRoute": {"shop": {"metadata": {"name": "shop"}, "spec": {"hostnames": ["shop.oil.example.com"]}}}}}},
		{"op": "add", "path": "/namespace/oil-prod/networking.k8s.io~1v1", "value": {"Ingress": {"web": {"metadata": {"name": "web"}, "spec": {"rules": [{"host": "web.oil.example.com"}]}}}}},
	])
	ingress := {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"}, "spec": {"rules": [{"host": "shop.oil.example.com"}, {"host": "web.oil.example.com"}]}}
	inp := f.request_for("networking.k8s.io", "Ingress", "ingresses", "CREATE", ingress)
	msgs := _msgs(gatekeeper.violations("collision")) with input as {"review": inp.request, "parameters": object.union(_params(["hostname-collision"]), {"registry": registry})}
		with data.inventory as inventory
	msgs == {`[hostname-collision] host "shop.oil.example.com" of Ingress "web" is already served by HTTPRoute "shop" in namespace "gas-apps"; choose another host`}
}

# a Constraint's registry as the export prunes it: the tenant label and,
# per tenant, the entries its rules read
_pruned(tenants) := {"settings": {"tenantLabel": "tenantguard.io/tenant"}, "tenants": tenants, "defaultTenant": {"name": ""}}

test_a_constraint_without_the_limit_reads_no_count if {
	inp := f.request("CREATE", f.pod({}))
	params := {"rules": ["host-network"], "registry": _pruned({"oil": {"name": "oil", "pods": {"allowHostNetwork": false}}})}
	facts := gatekeeper._facts with input as {"review": inp.request, "parameters": params}
		with data.inventory as _inventory
	not facts.cluster.counts
	facts.cluster.namespace.labels["tenantguard.io/tenant"] == "oil"
}

test_a_constraint_with_the_limit_counts_the_tenant_objects if {
	inp := f.request("CREATE", f.pod({}))
	params := {"rules": ["tenant-quota"], "registry": _pruned({"oil": {"name": "oil", "quotas": {"pods": 20}}})}
	facts := gatekeeper._facts with input as {"review": inp.request, "parameters": params}
		with data.inventory as _inventory
	facts.cluster.counts == {"oil": {"pods": 19}}
}

test_a_pruned_registry_decides_as_the_whole_one if {
	inp := f.request("CREATE", f.pod({"hostNetwork": true}))
	params := {"rules": ["host-network"], "registry": _pruned({"oil": {"name": "oil", "pods": {"allowHostNetwork": false}}})}
	msgs := _msgs(gatekeeper.violations("pods")) with input as {"review": inp.request, "parameters": params}
		with data.inventory as _inventory
	msgs == _violations("pods", inp, ["host-network"], _inventory)
	count(msgs) == 1
}

test_a_tenant_left_out_as_the_default_gets_the_default if {
	inp := f.request("CREATE", f.pod({"hostNetwork": true}))
	params := {"rules": ["host-network"], "registry": object.union(_pruned({}), {"defaultTenant": {"name": "", "pods": {"allowHostNetwork": false}}})}
	msgs := _msgs(gatekeeper.violations("pods")) with input as {"review": inp.request, "parameters": params}
		with data.inventory as _inventory
	count(msgs) == 1
}

test_the_namespace_object_stands_for_its_inventory_copy_in_counts if {
	inp := f.request_for("", "Namespace", "namespaces", "CREATE", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "oil-third", "labels": {"tenantguard.io/tenant": "oil"}}})
	review := object.union(inp.request, {"namespaceObject": {"metadata": {"name": "oil-dev", "labels": {}}}})
	params := {"rules": ["namespace-quota"], "registry": _pruned({"oil": {"name": "oil", "namespaceQuota": 2}})}
	facts := gatekeeper._facts with input as {"review": review, "parameters": params}
		with data.inventory as _inventory
	facts.cluster.counts == {"oil": {"namespaces": 1}}
}
