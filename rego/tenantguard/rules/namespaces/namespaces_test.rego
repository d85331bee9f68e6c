package tenantguard.rules.namespaces_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.rules.namespaces

_eval(inp) := {"violations": v, "mutations": m} if {
	v := namespaces.violations with input as inp with data.tenantguard.registry as f.registry
	m := namespaces.mutations with input as inp with data.tenantguard.registry as f.registry
}

_ids(inp) := {v.id | some v in _eval(inp).violations}

_msgs(inp) := {v.msg | some v in _eval(inp).violations}

_ns(name, labels) := {"kind": "Namespace", "metadata": {"name": name, "labels": labels}}

# A namespace CREATE by a user, with tenant counts.
_create(name, labels, info, counts) := {
	"request": {
		"uid": "t", "kind": {"group": "", "version": "v1", "kind": "Namespace"},
		"resource": {"group": "", "version": "v1", "resource": "namespaces"},
		"operation": "CREATE", "name": name, "userInfo": info,
		"object": _ns(name, labels),
	},
	"cluster": {"counts": counts},
}

_update(old, new, info) := {"request": {
	"uid": "t", "kind": {"group": "", "version": "v1", "kind": "Namespace"},
	"resource": {"group": "", "version": "v1", "resource": "namespaces"},
	"operation": "UPDATE", "name": new.metadata.name, "userInfo": info,
	"object": new, "oldObject": old,
}}

_delete(old, info) := {"request": {
	"uid": "t", "kind": {"group": "", "version": "v1", "kind": "Namespace"},
	"resource": {"group": "", "version": "v1", "resource": "namespaces"},
	"operation": "DELETE", "name": old.metadata.name, "userInfo": info,
	"oldObject": old,
}}

_alice := f.user("alice")

_oil := {"tenantguard.io/tenant": "oil"}

test_owner_creates_in_the_only_tenant_and_gets_the_label if {
	r := _eval(_create("oil-dev", {}, _alice, {}))
	count(r.violations) == 0
	r.mutations == {{"op": "add", "path": "/metadata/labels/tenantguard.io~1tenant", "value": "oil"}}
}

test_namespace_without_labels_gets_a_labels_map if {
	inp := json.remove(_create("oil-dev", {}, _alice, {}), ["request/object/metadata/labels"])
	_eval(inp).mutations == {{"op": "add", "path": "/metadata/labels", "value": {"tenantguard.io/tenant": "oil"}}}
}

test_owner_with_label_gets_no_patch if {
	r := _eval(_create("oil-dev", _oil, _alice, {}))
	count(r.violations) == 0
	count(r.mutations) == 0
}

test_owner_cannot_create_in_another_tenant if {
	_msgs(_create("gas-dev", {"tenantguard.io/tenant": "gas"}, _alice, {})) == {"\"alice\" is not an owner of tenant \"gas\"; allowed: tenants oil"}
}

test_label_naming_a_missing_tenant_is_denied if {
	_msgs(_create("oil-dev", {"tenantguard.io/tenant": "nope"}, _alice, {})) == {
		"tenant \"nope\" does not exist; label \"tenantguard.io/tenant\" must name a tenant you own: oil",
		"namespace \"oil-dev\" must be named \"nope-\" followed by a name, because tenant names are enforced as prefixes; e.g. \"nope-oil-dev\"",
	}
}

test_non_owner_is_told_they_own_no_tenant if {
	count(_eval(_create("oil-dev", {}, f.user("bob"), {})).mutations) == 0
	_msgs(_create("oil-dev", {}, f.user("bob"), {})) == {"\"bob\" owns no tenant, so cannot create namespace \"oil-dev\" in tenant \"oil\"; ask a platform administrator to add you as an owner"}
}

test_non_owner_namespaces_outside_tenants_are_left_alone if {
	r := _eval(_create("monitoring", {}, f.user("bob"), {}))
	count(r.violations) == 0
	count(r.mutations) == 0
}

test_owner_of_several_tenants_is_routed_by_prefix if {
	r := _eval(_create("gas-dev", {}, f.user("carol"), {}))
	count(r.violations) == 0
	r.mutations == {{"op": "add", "path": "/metadata/labels/tenantguard.io~1tenant", "value": "gas"}}
}

test_owner_of_several_tenants_without_a_hint_is_asked_for_one if {
	_msgs(_create("dev", {}, f.user("carol"), {})) == {"\"carol\" owns several tenants (gas, oil) and cannot tell which one namespace \"dev\" is for; set the label \"tenantguard.io/tenant\" or start the name with \"<tenant>-\""}
}

test_forced_prefix_is_enforced if {
	_msgs(_create("dev", {}, _alice, {})) == {"namespace \"dev\" must be named \"oil-\" followed by a name, because tenant names are enforced as prefixes; e.g. \"oil-dev\""}
}

test_prefix_is_free_when_not_forced if {
	registry := json.patch(f.registry, [{"op": "replace", "path": "/settings/forceTenantPrefix", "value": false}])
	vs := namespaces.violations with input as _create("dev", {}, _alice, {}) with data.tenantguard.registry as registry
	count(vs) == 0
}

test_a_service_account_owners_namespace_is_reserved_for_its_tenant if {
	registry := json.patch(f.registry, [{"op": "replace", "path": "/settings/forceTenantPrefix", "value": false}])
	want := {"namespace \"oil-ci\" holds ServiceAccount owners of tenant \"oil\", so only that tenant's owners may create it, in that tenant"}

	# another tenant's owner, someone owning nothing, an owner labelling it away
	every inp in [
		_create("oil-ci", {}, {"username": "gina", "groups": ["gas-team"]}, {}),
		_create("oil-ci", {}, f.user("bob"), {}),
		_create("oil-ci", {"tenantguard.io/tenant": "gas"}, f.user("carol"), {}),
	] {
		want & {v.msg | some v in namespaces.violations with input as inp with data.tenantguard.registry as registry} == want
	}
	count(namespaces.violations) == 0 with input as _create("oil-ci", {}, _alice, {}) with data.tenantguard.registry as registry
	count(namespaces.violations) == 0 with input as _create("oil-ci", {}, f.user("platform-admin"), {}) with data.tenantguard.registry as registry
}

test_a_namespace_holding_owners_of_several_tenants_is_for_administrators if {
	registry := json.patch(f.registry, [{"op": "add", "path": "/serviceAccountNamespaces/ci", "value": ["oil", "gas"]}])
	vs := namespaces.violations with input as _create("ci", _oil, _alice, {}) with data.tenantguard.registry as registry
	{v.msg | some v in vs} == {"namespace \"ci\" holds ServiceAccount owners of tenants gas, oil, so only administrators may create it", "namespace \"ci\" must be named \"oil-\" followed by a name, because tenant names are enforced as prefixes; e.g. \"oil-ci\""}
}

test_a_service_account_administrators_namespace_is_for_administrators if {
	registry := json.patch(f.registry, [{"op": "add", "path": "/administratorNamespaces", "value": {"oil-ops": true}}])
	vs := namespaces.violations with input as _create("oil-ops", {}, _alice, {}) with data.tenantguard.registry as registry
	{v.msg | some v in vs} == {"namespace \"oil-ops\" holds ServiceAccounts the registry trusts (administrators or cordon-exempt), so only administrators may create it"}
	count(namespaces.violations) == 0 with input as _create("oil-ops", {}, f.user("platform-admin"), {}) with data.tenantguard.registry as registry
}

test_protected_names_cannot_be_created_by_tenants if {
	_ids(_create("kube-oil", {}, _alice, {})) == {"protected-namespace", "namespace-prefix"}
	"protected-namespace" in _ids(_create("default", _oil, _alice, {}))
}

test_protected_names_cannot_be_claimed if {
	_ids(_update(_ns("kube-public", {}), _ns("kube-public", _oil), _alice)) == {"protected-namespace", "tenant-label-immutable"}
}

test_namespace_quota_is_enforced if {
	_msgs(_create("oil-dev", {}, _alice, {"oil": {"namespaces": 3}})) == {"tenant \"oil\" already has 3 of its 3 allowed namespaces; delete one first or ask for a higher namespaceQuota"}
	count(_ids(_create("oil-dev", {}, _alice, {"oil": {"namespaces": 2}}))) == 0
}

test_namespace_quota_binds_administrators_too if {
	_ids(_create("oil-more", _oil, f.user("platform-admin"), {"oil": {"namespaces": 3}})) == {"namespace-quota"}
}

test_administrators_create_anything if {
	r := _eval(_create("kube-extra", {"pod-security.kubernetes.io/enforce": "privileged"}, {"username": "x", "groups": ["system:masters"]}, {}))
	count(r.violations) == 0
	count(r.mutations) == 0
}

test_tenant_label_cannot_be_changed_or_removed if {
	_msgs(_update(_ns("oil-dev", _oil), _ns("oil-dev", {"tenantguard.io/tenant": "gas"}), _alice)) == {"the label \"tenantguard.io/tenant\" of namespace \"oil-dev\" cannot be changed from \"oil\" to \"gas\" by \"alice\"; only administrators move namespaces between tenants"}
	_msgs(_update(_ns("oil-dev", _oil), _ns("oil-dev", {}), _alice)) == {"the label \"tenantguard.io/tenant\" of namespace \"oil-dev\" cannot be removed by \"alice\"; only administrators move namespaces between tenants"}
}

test_tenant_label_cannot_be_added_to_claim_a_namespace if {
	_ids(_update(_ns("legacy", {}), _ns("legacy", _oil), _alice)) == {"tenant-label-immutable"}
}

test_administrators_move_namespaces if {
	count(_ids(_update(_ns("oil-dev", _oil), _ns("oil-dev", {"tenantguard.io/tenant": "gas"}), f.user("platform-admin")))) == 0
}

test_protected_labels_cannot_be_set_on_create if {
	_msgs(_create("oil-dev", {"pod-security.kubernetes.io/enforce": "privileged"}, _alice, {})) == {"label \"pod-security.kubernetes.io/enforce\" of namespace \"oil-dev\" is protected and cannot be added by \"alice\"; only administrators set it"}
}

test_protected_labels_cannot_be_changed_or_removed if {
	old := _ns("oil-dev", object.union(_oil, {"pod-security.kubernetes.io/enforce": "restricted", "oil.example.com/cost-center": "1"}))
	changed := _ns("oil-dev", object.union(_oil, {"pod-security.kubernetes.io/enforce": "privileged"}))
	_ids(_update(old, changed, _alice)) == {"protected-metadata"}
	count(_msgs(_update(old, changed, _alice))) == 2
}

test_unprotected_labels_are_free if {
	count(_ids(_update(_ns("oil-dev", _oil), _ns("oil-dev", object.union(_oil, {"team": "a"})), _alice))) == 0
}

test_protected_annotations_are_protected if {
	registry := json.patch(f.registry, [{"op": "replace", "path": "/tenants/oil/protectedAnnotations", "value": ["scheduler.alpha.kubernetes.io/node-selector"]}])
	old := object.union(_ns("oil-dev", _oil), {"metadata": {"annotations": {}}})
	new := object.union(_ns("oil-dev", _oil), {"metadata": {"annotations": {"scheduler.alpha.kubernetes.io/node-selector": "pool=gpu"}}})
	vs := namespaces.violations with input as _update(old, new, _alice) with data.tenantguard.registry as registry
	{v.msg | some v in vs} == {"annotation \"scheduler.alpha.kubernetes.io/node-selector\" of namespace \"oil-dev\" is protected and cannot be added by \"alice\"; only administrators set it"}
}

test_protected_annotations_cleared_by_null_are_removed if {
	registry := json.patch(f.registry, [{"op": "replace", "path": "/tenants/oil/protectedAnnotations", "value": ["scheduler.alpha.kubernetes.io/node-selector"]}])
	old := object.union(_ns("oil-dev", _oil), {"metadata": {"annotations": {"scheduler.alpha.kubernetes.io/node-selector": "pool=a"}}})
	new := object.union(_ns("oil-dev", _oil), {"metadata": {"annotations": null}})
	vs := namespaces.violations with input as _update(old, new, _alice) with data.tenantguard.registry as registry
	{v.msg | some v in vs} == {"annotation \"scheduler.alpha.kubernetes.io/node-selector\" of namespace \"oil-dev\" is protected and cannot be removed by \"alice\"; only administrators set it"}
}

test_owner_deletes_own_namespace if {
	count(_ids(_delete(_ns("oil-dev", _oil), _alice))) == 0
}

test_others_cannot_delete_tenant_namespaces if {
	_msgs(_delete(_ns("oil-dev", _oil), f.user("dave"))) == {"only owners of tenant \"oil\" and administrators may delete namespace \"oil-dev\"; \"dave\" is neither"}
	_ids(_delete(_ns("gas-dev", {"tenantguard.io/tenant": "gas"}), _alice)) == {"namespace-ownership"}
}

test_delete_without_old_object_uses_the_cluster_view if {
	inp := {
		"request": {"kind": {"kind": "Namespace"}, "operation": "DELETE", "name": "oil-dev", "userInfo": f.user("dave")},
		"cluster": {"namespace": f.tenant_namespace("oil-dev", "oil")},
	}
	_ids(inp) == {"namespace-ownership"}
}

test_non_tenant_namespaces_are_deleted_freely if {
	count(_ids(_delete(_ns("scratch", {}), f.user("dave")))) == 0
}
