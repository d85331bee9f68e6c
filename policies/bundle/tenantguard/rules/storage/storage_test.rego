package tenantguard.rules.storage_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.rules.storage

_eval(inp) := {"violations": v, "mutations": m} if {
	v := storage.violations with input as inp with data.tenantguard.registry as f.registry
	m := storage.mutations with input as inp with data.tenantguard.registry as f.registry
}

_pvc(spec) := {"kind": "PersistentVolumeClaim", "metadata": {"name": "data"}, "spec": spec}

_sts(templates) := {"kind": "StatefulSet", "metadata": {"name": "db"}, "spec": {"volumeClaimTemplates": templates, "template": {"spec": {"containers": [f.container({})]}}}}

test_allowed_class_passes if {
	r := _eval(f.request("CREATE", _pvc({"storageClassName": "standard"})))
	count(r.violations) == 0
	count(r.mutations) == 0
}

test_other_class_is_denied if {
	r := _eval(f.request("CREATE", _pvc({"storageClassName": "fast"})))
	r.violations == {{"id": "storage-class", "msg": "StorageClass \"fast\" of PersistentVolumeClaim \"data\" is not allowed for tenant \"oil\"; allowed: standard"}}
}

test_empty_class_is_a_name_like_any_other if {
	r := _eval(f.request("CREATE", _pvc({"storageClassName": ""})))
	{v.id | some v in r.violations} == {"storage-class"}
	count(r.mutations) == 0
}

test_legacy_annotation_cannot_bypass if {
	pvc := object.union(_pvc({"storageClassName": "standard"}), {"metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "fast"}}})
	r := _eval(f.request("CREATE", pvc))
	{v.msg | some v in r.violations} == {"StorageClass \"fast\" of PersistentVolumeClaim \"data\" is not allowed for tenant \"oil\"; allowed: standard"}
}

test_claim_without_class_gets_default if {
	r := _eval(f.request("CREATE", _pvc({"accessModes": ["ReadWriteOnce"]})))
	r.mutations == {{"op": "add", "path": "/spec/storageClassName", "value": "standard"}}
}

test_statefulset_claim_templates_are_checked_and_defaulted if {
	obj := _sts([{"metadata": {"name": "a"}, "spec": {"storageClassName": "fast"}}, {"metadata": {"name": "b"}, "spec": {}}])
	r := _eval(f.request_for("apps", "StatefulSet", "statefulsets", "CREATE", obj))
	{v.msg | some v in r.violations} == {"StorageClass \"fast\" of volumeClaimTemplate \"a\" of StatefulSet \"db\" is not allowed for tenant \"oil\"; allowed: standard"}
	r.mutations == {{"op": "add", "path": "/spec/volumeClaimTemplates/1/spec/storageClassName", "value": "standard"}}
}

test_generic_ephemeral_volumes_are_checked_and_defaulted if {
	pod := f.pod({"containers": [f.container({})], "volumes": [
		{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "fast"}}}},
		{"name": "cache", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
	]})
	r := _eval(f.request("CREATE", pod))
	{v.msg | some v in r.violations} == {"StorageClass \"fast\" of ephemeral volume \"scratch\" is not allowed for tenant \"oil\"; allowed: standard"}
	r.mutations == {{"op": "add", "path": "/spec/volumes/1/ephemeral/volumeClaimTemplate/spec/storageClassName", "value": "standard"}}
}

test_regex_allows_classes if {
	inp := f.in_namespace(f.request("CREATE", _pvc({"storageClassName": "gas-fast"})), "gas-a", "gas")
	r := _eval(inp)
	count(r.violations) == 0
	inp2 := f.in_namespace(f.request("CREATE", _pvc({"storageClassName": "fast"})), "gas-a", "gas")
	{v.msg | some v in _eval(inp2).violations} == {"StorageClass \"fast\" of PersistentVolumeClaim \"data\" is not allowed for tenant \"gas\"; allowed: standard, or names matching ^gas-"}
}

test_tenant_without_default_sets_none_and_refuses_claims_naming_none if {
	inp := f.in_namespace(f.request("CREATE", _pvc({})), "gas-a", "gas")
	r := _eval(inp)
	count(r.mutations) == 0
	r.violations == {{"id": "storage-class", "msg": "PersistentVolumeClaim \"data\" names no StorageClass and tenant \"gas\" has no default one; name one of: standard, or names matching ^gas-"}}
	sts := _sts([{"metadata": {"name": "a"}, "spec": {}}])
	{v.msg | some v in _eval(f.in_namespace(f.request_for("apps", "StatefulSet", "statefulsets", "CREATE", sts), "gas-a", "gas")).violations} == {"volumeClaimTemplate \"a\" of StatefulSet \"db\" names no StorageClass and tenant \"gas\" has no default one; name one of: standard, or names matching ^gas-"}
}

test_claim_without_class_is_not_rejudged_on_update if {
	inp := f.in_namespace(f.update(_pvc({}), _pvc({"resources": {}})), "gas-a", "gas")
	count(_eval(inp).violations) == 0
}

test_an_update_adding_a_claim_without_class_is_judged if {
	old := f.pod({"containers": [f.container({})]})
	new := f.pod({"containers": [f.container({})], "volumes": [{"name": "cache", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]})
	{v.msg | some v in _eval(f.in_namespace(f.update(old, new), "gas-a", "gas")).violations} == {"ephemeral volume \"cache\" names no StorageClass and tenant \"gas\" has no default one; name one of: standard, or names matching ^gas-"}
	count(_eval(f.in_namespace(f.update(new, new), "gas-a", "gas")).violations) == 0
}

test_an_update_dropping_a_class_or_inserting_a_volume_is_judged if {
	classed := {"name": "cache", "ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "standard"}}}}
	classless := {"name": "cache", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
	old := f.pod({"containers": [f.container({})], "volumes": [classed]})
	dropped := f.pod({"containers": [f.container({})], "volumes": [classless]})
	{v.id | some v in _eval(f.in_namespace(f.update(old, dropped), "gas-a", "gas")).violations} == {"storage-class"}

	# a classless volume inserted before a classless one is judged; the old one is not
	before := f.pod({"containers": [f.container({})], "volumes": [classless]})
	inserted := f.pod({"containers": [f.container({})], "volumes": [object.union(classless, {"name": "scratch"}), classless]})
	{v.msg | some v in _eval(f.in_namespace(f.update(before, inserted), "gas-a", "gas")).violations} == {"ephemeral volume \"scratch\" names no StorageClass and tenant \"gas\" has no default one; name one of: standard, or names matching ^gas-"}
}

test_update_keeping_a_grandfathered_class_is_allowed if {
	r := _eval(f.update(_pvc({"storageClassName": "fast"}), _pvc({"storageClassName": "fast", "resources": {}})))
	count(r.violations) == 0
}

test_update_changing_the_class_is_judged if {
	r := _eval(f.update(_pvc({}), _pvc({"storageClassName": "fast"})))
	{v.id | some v in r.violations} == {"storage-class"}
}

test_delete_is_not_judged if {
	inp := json.patch(f.request("DELETE", _pvc({"storageClassName": "fast"})), [{"op": "add", "path": "/request/oldObject", "value": _pvc({"storageClassName": "fast"})}])
	count(_eval(inp).violations) == 0
}
