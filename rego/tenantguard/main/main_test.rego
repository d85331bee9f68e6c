package tenantguard.main_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.main

_decision(inp, registry) := d if {
	d := main.decision with input as inp
		with data.tenantguard.registry as registry
		with data.tenantguard.catalog as f.catalog
}

test_a_kind_is_routed_to_the_families_the_catalog_gives_it if {
	main.families == ["pods", "priority", "quota", "storage"] with input as f.request("CREATE", f.pod({}))
		with data.tenantguard.catalog as f.catalog
	main.mutating_families == ["priority", "storage"] with input as f.request("CREATE", f.pod({}))
		with data.tenantguard.catalog as f.catalog
}

test_core_kinds_are_keyed_without_a_group if {
	main.families == ["namespaces"] with input as {"request": {"kind": {"group": "", "version": "v1", "kind": "Namespace"}, "operation": "CREATE"}}
		with data.tenantguard.catalog as f.catalog
	main.families == ["quota"] with input as {"request": {"kind": {"group": "apps", "version": "v1", "kind": "Namespace"}, "operation": "CREATE"}}
		with data.tenantguard.catalog as f.catalog
}

test_other_kinds_get_the_families_of_every_kind if {
	main.families == ["quota"] with input as f.request("CREATE", {"kind": "ConfigMap", "metadata": {"name": "c"}})
		with data.tenantguard.catalog as f.catalog
	main.mutating_families == [] with input as f.request("CREATE", {"kind": "ConfigMap", "metadata": {"name": "c"}})
		with data.tenantguard.catalog as f.catalog
}

test_without_a_catalog_nothing_is_decided if {
	# as {}: an exported bundle carries its catalog in data.json
	not main.decision with input as f.request("CREATE", f.pod({})) with data.tenantguard.registry as f.registry
		with data.tenantguard.catalog as {}
	not main.mutations with input as f.request("CREATE", f.pod({})) with data.tenantguard.registry as f.registry
		with data.tenantguard.catalog as {}
}

test_with_half_a_catalog_nothing_is_decided if {
	every catalog in [{"routes": {}}, {"routes": {"validate": {}}}, {"routes": {"mutate": {}}}, {"routes": {"validate": [], "mutate": {}}}] {
		not main.decision with input as f.request("CREATE", f.pod({})) with data.tenantguard.registry as f.registry
			with data.tenantguard.catalog as catalog
	}
}

test_a_rule_default_enforcement_applies_unless_the_registry_sets_one if {
	inp := f.request("CREATE", f.pod({"hostNetwork": true, "containers": [f.container({})]}))
	catalog := json.patch(f.catalog, [{"op": "replace", "path": "/enforcement/host-network", "value": "warn"}])
	d := main.decision with input as inp with data.tenantguard.registry as f.registry with data.tenantguard.catalog as catalog
	[v.id | some v in d.warn] == ["host-network"]
	registry := json.patch(f.registry, [{"op": "replace", "path": "/settings/enforcement", "value": {"host-network": "dryrun"}}])
	e := main.decision with input as inp with data.tenantguard.registry as registry with data.tenantguard.catalog as catalog
	[v.id | some v in e.dryrun] == ["host-network"]
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
	m := main.mutations with input as inp with data.tenantguard.registry as f.registry with data.tenantguard.catalog as f.catalog
	m == [
		{"op": "add", "path": "/spec/priorityClassName", "value": "tenant-low"},
		{"op": "add", "path": "/spec/volumes/0/ephemeral/volumeClaimTemplate/spec/storageClassName", "value": "standard"},
	]
}

test_a_replica_set_a_controller_owns_takes_no_default if {
	registry := object.union(f.registry, {"tenants": {"oil": {
		"runtimeClasses": {"allowed": ["gvisor"], "allowedRegex": "", "default": "gvisor"},
		"nodePlacement": {"nodeSelector": {"pool": "oil"}, "tolerations": [], "allowNodeName": false},
	}}})
	catalog := object.union(f.catalog, {"routes": {"mutate": {"apps/ReplicaSet": ["nodes", "priority", "runtime", "storage"]}}})
	spec := {"containers": [f.container({})], "volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]}
	owner := {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u", "controller": true}
	replica_set := {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-5d8f"}, "spec": {"template": {"spec": spec}}}
	inp := f.request_for("apps", "ReplicaSet", "replicasets", "CREATE", replica_set)
	owned := f.request_for("apps", "ReplicaSet", "replicasets", "CREATE", json.patch(replica_set, [{"op": "add", "path": "/metadata/ownerReferences", "value": [owner]}]))

	defaulted := main.mutations with input as inp with data.tenantguard.registry as registry with data.tenantguard.catalog as catalog
	{m.path | some m in defaulted} == {
		"/spec/template/spec/nodeSelector",
		"/spec/template/spec/priorityClassName",
		"/spec/template/spec/runtimeClassName",
		"/spec/template/spec/volumes/0/ephemeral/volumeClaimTemplate/spec/storageClassName",
	}
	main.mutations == [] with input as owned with data.tenantguard.registry as registry with data.tenantguard.catalog as catalog
}
