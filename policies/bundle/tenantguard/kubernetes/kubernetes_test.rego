package tenantguard.kubernetes_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.kubernetes

_ns(name, tenant) := {"metadata": {"name": name, "labels": {"tenantguard.io/tenant": tenant}}}

_pods(n, phase) := {sprintf("p%d", [i]): {"metadata": {"name": sprintf("p%d", [i])}, "status": {"phase": phase}} | some i in numbers.range(1, n)}

# a cluster as kube-mgmt replicates it: oil has 2 namespaces and 19 running
# pods (plus finished ones, which do not count)
_cluster := {
	"namespaces": {"oil-dev": _ns("oil-dev", "oil"), "oil-prod": _ns("oil-prod", "oil"), "monitoring": {"metadata": {"name": "monitoring"}}},
	"pods": {
		"oil-dev": _pods(10, "Running"),
		"oil-prod": object.union(_pods(9, "Running"), {"done": {"status": {"phase": "Succeeded"}}, "failed": {"status": {"phase": "Failed"}}}),
	},
	"priorityclasses": {"tenant-low": {"metadata": {"name": "tenant-low"}, "value": 1000, "preemptionPolicy": "Never"}},
}

_review(inp) := {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": inp.request}

_validate(inp, cluster) := result if {
	result := kubernetes.validate.response with input as _review(inp)
		with data.tenantguard.registry as f.registry
		with data.tenantguard.catalog as f.catalog
		with data.kubernetes as cluster
}

_mutate(inp, cluster) := result if {
	result := kubernetes.mutate.response with input as _review(inp)
		with data.tenantguard.registry as f.registry
		with data.tenantguard.catalog as f.catalog
		with data.kubernetes as cluster
}

_facts(inp, cluster) := _facts_under(inp, cluster, f.registry)

_facts_under(inp, cluster, registry) := result if {
	result := kubernetes.policy_input.cluster with input as _review(inp)
		with data.tenantguard.registry as registry
		with data.kubernetes as cluster
}

# the cluster's facts with oil limited to 2 CPUs requested tenant-wide;
# its replicated pods request none
_quota_facts(inp) := _facts_under(inp, _cluster, json.patch(f.registry, [{"op": "add", "path": "/tenants/oil/resourceQuota", "value": {"hard": {"requests.cpu": "2"}}}]))

_cpu_pod(cpu) := f.request("CREATE", f.pod({"containers": [f.container({"resources": {"requests": {"cpu": cpu}}})]}))

test_a_pod_over_its_tenants_resource_quota_sees_the_sums_it_would_exceed if {
	_quota_facts(_cpu_pod("3")).resources == {"adds": {"requests.cpu": 3000}, "used": {"requests.cpu": 0}, "room": {"requests.cpu": 2000}, "namespaces": 2}
	not _quota_facts(_cpu_pod("500m")).resources
	not _quota_facts(_cpu_pod("2")).resources
}

_namespace(name) := f.request_for("", "Namespace", "namespaces", "CREATE", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

test_a_pod_sees_its_namespace_and_the_running_pods_of_its_tenant if {
	_facts(f.request("CREATE", f.pod({})), _cluster) == {
		"namespace": {"name": "oil-dev", "labels": {"tenantguard.io/tenant": "oil"}},
		"counts": {"oil": {"pods": 19}},
		"priorityClasses": {"tenant-low": {"priority": 1000, "preemptionPolicy": "Never"}},
	}
}

test_a_created_namespace_sees_the_counts_of_every_candidate_tenant if {
	inp := f.as_user(_namespace("gas-new"), f.user("carol"))
	_facts(inp, _cluster) == {"counts": {"gas": {"namespaces": 0}, "oil": {"namespaces": 2}}}
}

_count(tenant, key, cluster) := n if {
	n := kubernetes.count_of(tenant, key) with data.tenantguard.registry as f.registry
		with data.kubernetes as cluster
}

test_a_tenants_running_pods_are_counted_across_its_namespaces if {
	_count("oil", "pods", _cluster) == 19
	_count("gas", "pods", _cluster) == 0
}

test_a_pod_without_a_phase_counts if {
	_count("oil", "pods", json.patch(_cluster, [{"op": "add", "path": "/pods/oil-dev/new", "value": {}}])) == 20
}

test_a_tenants_namespaces_are_counted_by_their_label if {
	_count("oil", "namespaces", _cluster) == 2
	_count("gas", "namespaces", _cluster) == 0
	_count("oil", "namespaces", {}) == 0
}

test_other_resources_are_counted_by_namespace_under_their_resource if {
	cluster := object.union(_cluster, {
		"deployments": {"oil-dev": {"a": {}, "b": {}}, "oil-prod": {"c": {"status": {"phase": "Failed"}}}, "monitoring": {"d": {}}},
		"services": {"oil-prod": {"web": {}}},
	})
	_count("oil", "count/deployments.apps", cluster) == 3
	_count("oil", "services", cluster) == 1
	_count("oil", "persistentvolumeclaims", cluster) == 0
}

test_a_created_namespace_is_refused_beyond_its_tenants_namespace_quota if {
	full := json.patch(_cluster, [{"op": "add", "path": "/namespaces/oil-test", "value": _ns("oil-test", "oil")}])
	response := _validate(_namespace("oil-new"), full)
	not response.allowed
	response.status.message == `[namespace-quota] tenant "oil" already has 3 of its 3 allowed namespaces; delete one first or ask for a higher namespaceQuota`
	_validate(_namespace("oil-new"), _cluster) == {"uid": "test", "allowed": true}
}

test_updates_see_no_counts if {
	_facts(f.update(f.pod({}), f.pod({})), _cluster) == {"namespace": {"name": "oil-dev", "labels": {"tenantguard.io/tenant": "oil"}}}
}

test_an_unknown_namespace_sees_nothing if {
	_facts(f.request("CREATE", object.union(f.pod({}), {"metadata": {"namespace": "nowhere"}})), _cluster) == {}
}

test_a_request_in_a_namespace_not_replicated_yet_is_refused_for_a_retry if {
	response := _validate(f.request("CREATE", object.union(f.pod({}), {"metadata": {"namespace": "nowhere"}})), _cluster)
	not response.allowed
	startswith(response.status.message, "[internal] namespace \"nowhere\" is not replicated into OPA's data.kubernetes yet")
}

test_a_namespace_not_replicated_yet_is_decided if {
	_validate(_namespace("oil-new"), _cluster).allowed
}

test_no_replicated_data_means_no_facts if {
	facts := kubernetes.policy_input.cluster with input as _review(f.request("CREATE", f.pod({})))
		with data.tenantguard.registry as f.registry
	facts == {}
}

test_the_twentieth_pod_passes_and_is_mutated if {
	response := _mutate(f.request("CREATE", f.pod({})), _cluster)
	response.allowed
	response.patchType == "JSONPatch"
	ops := json.unmarshal(base64.decode(response.patch))
	{op.path | some op in ops} == {"/spec/priorityClassName", "/spec/priority", "/spec/preemptionPolicy"}
	_validate(f.request("CREATE", f.pod({"priorityClassName": "tenant-low"})), _cluster) == {"uid": "test", "allowed": true}
}

test_the_twenty_first_pod_is_denied_with_the_rule_message if {
	full := json.patch(_cluster, [{"op": "add", "path": "/pods/oil-dev/p11", "value": {}}])
	response := _validate(f.request("CREATE", f.pod({"priorityClassName": "tenant-low"})), full)
	not response.allowed
	response.status.code == 403
	startswith(response.status.message, "[tenant-quota] tenant \"oil\" already has 20 of its 20 allowed pods")
}

test_every_denial_is_one_line_sorted if {
	inp := f.request("CREATE", f.pod({"hostNetwork": true, "priorityClassName": "batch-high"}))
	lines := split(_validate(inp, _cluster).status.message, "\n")
	count(lines) == 2
	lines == sort(lines)
	startswith(lines[0], "[host-network] ")
	startswith(lines[1], "[priority-class] ")
}

test_a_strangers_namespace_claim_is_denied if {
	inp := f.as_user(_namespace("oil-mine"), f.user("mallory"))
	response := _validate(inp, _cluster)
	not response.allowed
	startswith(response.status.message, "[namespace-ownership] ")
}

test_warn_and_dryrun_modes_answer_as_the_server_does if {
	registry := json.patch(f.registry, [{"op": "add", "path": "/settings/enforcement", "value": {"host-network": "warn", "priority-class": "dryrun"}}])
	inp := f.request("CREATE", f.pod({"hostNetwork": true, "priorityClassName": "batch-high"}))
	response := kubernetes.validate.response with input as _review(inp)
		with data.tenantguard.registry as registry
		with data.tenantguard.catalog as f.catalog
		with data.kubernetes as _cluster
	response.allowed
	count(response.warnings) == 1
	startswith(response.warnings[0], "[host-network] ")
	startswith(response.auditAnnotations["dryrun-priority-class"], "[priority-class] ")
}

_edge_registry := json.patch(f.registry, [{"op": "add", "path": "/tenants/oil/ingress", "value": {"hostnameCollision": "cluster"}}])

# gas-apps (tenant gas) serves shop.oil.example.com by an Ingress's rule,
# whose TLS hosts (its certificate's names, free.oil.example.com among
# them) serve nothing; oil-dev serves its own web host by an HTTPRoute
_edge_cluster := object.union(_cluster, {
	"namespaces": {"gas-apps": _ns("gas-apps", "gas")},
	"ingresses": {"gas-apps": {"shop": {"metadata": {"name": "shop"}, "spec": {"rules": [{"host": "other.gas.example.com"}, {"host": "SHOP.oil.example.com"}], "tls": [{"hosts": ["free.oil.example.com", "*.oil.example.com"]}]}}}},
	"httproutes": {"oil-dev": {"web": {"metadata": {"name": "web"}, "spec": {"hostnames": ["web.oil.example.com"]}}}},
})

_route(name, hosts) := f.request_for("gateway.networking.k8s.io", "HTTPRoute", "httproutes", "CREATE", {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": name}, "spec": {"hostnames": hosts}})

_edge_facts(inp) := result if {
	result := kubernetes.policy_input.cluster.hosts with input as _review(inp)
		with data.tenantguard.registry as _edge_registry
		with data.kubernetes as _edge_cluster
}

test_a_route_sees_the_other_objects_serving_its_hosts_but_not_itself if {
	_edge_facts(_route("web", ["shop.oil.example.com", "web.oil.example.com", "free.oil.example.com"])) == {"shop.oil.example.com": [{"group": "networking.k8s.io", "kind": "Ingress", "namespace": "gas-apps", "name": "shop", "tenant": "gas"}]}
}

test_a_route_of_another_name_sees_the_route_serving_its_host if {
	_edge_facts(_route("api", ["web.oil.example.com"])) == {"web.oil.example.com": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "oil-dev", "name": "web", "tenant": "oil"}]}
}

test_no_host_facts_where_collisions_are_off if {
	facts := kubernetes.policy_input.cluster with input as _review(_route("api", ["web.oil.example.com"]))
		with data.tenantguard.registry as f.registry
		with data.kubernetes as _edge_cluster
	not facts.hosts
}

test_a_collision_is_denied_through_the_validating_entrypoint if {
	catalog := json.patch(f.catalog, [{"op": "add", "path": "/routes/validate/gateway.networking.k8s.io~1HTTPRoute", "value": ["collision"]}])
	response := kubernetes.validate.response with input as _review(_route("api", ["shop.oil.example.com"]))
		with data.tenantguard.registry as _edge_registry
		with data.tenantguard.catalog as catalog
		with data.kubernetes as _edge_cluster
	response.status.message == `[hostname-collision] host "shop.oil.example.com" of HTTPRoute "api" is already served by Ingress "shop" in namespace "gas-apps"; choose another host`
}

# the entrypoints count when a rule asks, and only what it asks: carol
# owns gas and oil, and a namespace labelled for oil has only oil's
# namespaces counted (counting another tenant's is a conflict, an error)
_count_only_oil("oil", "namespaces") := 2

_count_only_oil(tenant, _) := 1 if tenant != "oil"

_count_only_oil(tenant, _) := 2 if tenant != "oil"

test_the_entrypoints_count_only_what_a_rule_asks if {
	ns := {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "oil-new", "labels": {"tenantguard.io/tenant": "oil"}}}
	inp := f.as_user(f.request_for("", "Namespace", "namespaces", "CREATE", ns), f.user("carol"))
	response := kubernetes.validate.response with input as _review(inp)
		with data.tenantguard.registry as f.registry
		with data.tenantguard.catalog as f.catalog
		with data.kubernetes as _cluster
		with kubernetes.count_of as _count_only_oil
	response.allowed
}
