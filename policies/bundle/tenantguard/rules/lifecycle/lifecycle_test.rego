package tenantguard.rules.lifecycle_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.rules.lifecycle

_eval(inp, tenant) := _eval_trusting(inp, tenant, {})

# _eval_trusting is _eval with the compiled registry's cordonExempt.
_eval_trusting(inp, tenant, exempt) := v if {
	reg := object.union(f.registry, {"tenants": {"oil": tenant}, "cordonExempt": exempt})
	v := lifecycle.violations with input as inp with data.tenantguard.registry as reg
}

_cordoned := {"cordoned": true}

_config_map := {"kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "b"}}

_namespace(name, tenant) := {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"tenantguard.io/tenant": tenant}}}

_namespace_request(op, ns) := object.union(f.request_for("", "Namespace", "namespaces", op, ns), {
	"request": {"namespace": ns.metadata.name},
	"cluster": {"namespace": {"name": ns.metadata.name, "labels": ns.metadata.labels}},
})

test_a_cordoned_tenant_creates_and_changes_nothing if {
	every op in ["CREATE", "UPDATE"] {
		_eval(f.request(op, _config_map), _cordoned) == {{"id": "tenant-cordoned", "msg": sprintf("tenant \"oil\" is cordoned, so ConfigMap \"settings\" in namespace \"oil-dev\" cannot be %s until an administrator lifts the cordon; deleting is allowed", [{"CREATE": "created", "UPDATE": "changed"}[op]])}}
	}
}

test_a_cordoned_tenant_still_deletes if {
	count(_eval(f.request("DELETE", _config_map), _cordoned)) == 0
}

test_an_object_being_deleted_loses_its_finalizers if {
	going := object.union(_config_map, {"metadata": {"deletionTimestamp": "2026-11-27T12:00:00Z", "finalizers": ["example.io/cleanup"]}})
	gone := object.union(going, {"metadata": {"finalizers": []}})
	inp := object.union(f.request("UPDATE", gone), {"request": {"oldObject": going}})
	count(_eval(inp, _cordoned)) == 0
	ns := object.union(_namespace("oil-dev", "oil"), {"metadata": {"deletionTimestamp": "2026-11-27T12:00:00Z", "finalizers": ["example.io/cleanup"]}})
	finalized := object.union(_namespace_request("UPDATE", object.union(ns, {"metadata": {"finalizers": []}})), {"request": {"oldObject": ns}})
	count(_eval(finalized, _cordoned)) == 0
}

test_a_namespace_being_deleted_loses_its_own_finalizers if {
	ns := object.union(_namespace("oil-dev", "oil"), {"metadata": {"deletionTimestamp": "2026-11-27T12:00:00Z"}, "spec": {"finalizers": ["kubernetes", "example.io/storage"]}})
	finalized := object.union(_namespace_request("UPDATE", object.union(ns, {"spec": {"finalizers": ["kubernetes"]}})), {"request": {"oldObject": ns, "subResource": "finalize"}})
	count(_eval(finalized, _cordoned)) == 0
	added := object.union(_namespace_request("UPDATE", object.union(ns, {"spec": {"finalizers": ["kubernetes", "example.io/storage", "example.io/more"]}})), {"request": {"oldObject": ns, "subResource": "finalize"}})
	{v.id | some v in _eval(added, _cordoned)} == {"tenant-cordoned"}
}

test_an_object_being_deleted_is_not_otherwise_changed if {
	going := object.union(_config_map, {"metadata": {"deletionTimestamp": "2026-11-27T12:00:00Z", "finalizers": ["example.io/cleanup"]}})
	rewritten := object.union(going, {"data": {"a": "c"}})
	inp := object.union(f.request("UPDATE", rewritten), {"request": {"oldObject": going}})
	{v.id | some v in _eval(inp, _cordoned)} == {"tenant-cordoned"}
}

test_an_object_not_yet_being_deleted_is_not_changed if {
	inp := object.union(f.request("UPDATE", object.union(_config_map, {"metadata": {"deletionTimestamp": "2026-11-27T12:00:00Z"}})), {"request": {"oldObject": _config_map}})
	{v.id | some v in _eval(inp, _cordoned)} == {"tenant-cordoned"}
}

test_events_and_leases_go_on if {
	every kind in [["", "Event", "events"], ["events.k8s.io", "Event", "events"], ["coordination.k8s.io", "Lease", "leases"]] {
		inp := f.request_for(kind[0], kind[1], kind[2], "UPDATE", {"kind": kind[1], "metadata": {"name": "x"}})
		count(_eval(inp, _cordoned)) == 0
	}
}

test_administrators_tenantguard_and_the_control_plane_are_exempt if {
	every user in [
		f.user("platform-admin"),
		{"username": "someone", "groups": ["system:masters"]},
		f.user("system:serviceaccount:kube-system:replicaset-controller"),
	] {
		count(_eval(f.as_user(f.request("CREATE", _config_map), user), _cordoned)) == 0
	}
}

test_other_tenants_are_not_cordoned if {
	count(_eval(f.in_namespace(f.request("CREATE", _config_map), "gas-a", "gas"), _cordoned)) == 0
	count(_eval(f.request("CREATE", _config_map), {"cordoned": false})) == 0
}

test_no_namespace_is_created_or_relabelled_for_a_cordoned_tenant if {
	created := _namespace_request("CREATE", _namespace("oil-new", "oil"))
	_eval(created, _cordoned) == {{"id": "tenant-cordoned", "msg": "tenant \"oil\" is cordoned, so Namespace \"oil-new\" cannot be created until an administrator lifts the cordon; deleting is allowed"}}
	relabelled := object.union(_namespace_request("UPDATE", _namespace("oil-dev", "gas")), {"request": {"oldObject": _namespace("oil-dev", "oil")}})
	{v.id | some v in _eval(relabelled, _cordoned)} == {"tenant-cordoned"}
}

test_a_protected_namespace_is_deleted_by_administrators_only if {
	deleted := object.union(_namespace_request("DELETE", _namespace("oil-dev", "oil")), {"request": {"object": null, "oldObject": _namespace("oil-dev", "oil")}})
	_eval(deleted, {"preventNamespaceDeletion": true}) == {{"id": "namespace-deletion", "msg": "namespace \"oil-dev\" of tenant \"oil\" is protected from deletion; only administrators delete it"}}
	count(_eval(f.as_user(deleted, f.user("platform-admin")), {"preventNamespaceDeletion": true})) == 0
	count(_eval(deleted, {"preventNamespaceDeletion": false})) == 0
}

test_the_view_names_the_tenant_when_the_request_does_not if {
	deleted := json.patch(_namespace_request("DELETE", _namespace("oil-dev", "oil")), [{"op": "remove", "path": "/request/object"}])
	{v.id | some v in _eval(deleted, {"preventNamespaceDeletion": true})} == {"namespace-deletion"}
}

test_a_scale_is_named_by_the_workload_it_scales if {
	inp := object.union(f.request_for("autoscaling", "Scale", "deployments", "UPDATE", {"kind": "Scale", "metadata": {"name": "web"}, "spec": {"replicas": 5}}), {"request": {
		"subResource": "scale",
		"resource": {"group": "apps", "version": "v1", "resource": "deployments"},
	}})
	_eval(inp, _cordoned) == {{"id": "tenant-cordoned", "msg": "tenant \"oil\" is cordoned, so the scale of deployments \"web\" in namespace \"oil-dev\" cannot be changed until an administrator lifts the cordon; deleting is allowed"}}
}

test_cordon_exempt_requesters_pass_a_cordon_and_no_other_rule if {
	exempt := {"users": {"system:serviceaccount:cert-manager:cert-manager": true}, "groups": {"platform-add-ons": true, "system:serviceaccounts:mesh-system": true}}
	deleted := object.union(_namespace_request("DELETE", _namespace("oil-dev", "oil")), {"request": {"object": null, "oldObject": _namespace("oil-dev", "oil")}})
	every user in [
		f.user("system:serviceaccount:cert-manager:cert-manager"),
		{"username": "external-secrets", "groups": ["platform-add-ons"]},
		{"username": "system:serviceaccount:mesh-system:istiod", "groups": ["system:serviceaccounts", "system:serviceaccounts:mesh-system"]},
	] {
		count(_eval_trusting(f.as_user(f.request("UPDATE", _config_map), user), _cordoned, exempt)) == 0
		{v.id | some v in _eval_trusting(f.as_user(deleted, user), {"preventNamespaceDeletion": true}, exempt)} == {"namespace-deletion"}
	}
	{v.id | some v in _eval_trusting(f.as_user(f.request("UPDATE", _config_map), f.user("system:serviceaccount:cert-manager:cainjector")), _cordoned, exempt)} == {"tenant-cordoned"}
}
