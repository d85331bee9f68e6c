package tenantguard.rules.managed_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.rules.managed

_msgs(inp) := {v.msg | some v in vs} if {
	vs := managed.violations with input as inp
		with data.tenantguard.registry as f.registry
		with data.tenantguard.runtime.managers as {"system:serviceaccount:tenantguard-system:tenantguard": true}
}

_binding := {"kind": "RoleBinding", "metadata": {"name": "tenantguard-owners", "labels": {"app.kubernetes.io/managed-by": "tenantguard"}}}

_delete := json.patch(f.request("DELETE", _binding), [
	{"op": "remove", "path": "/request/object"},
	{"op": "add", "path": "/request/oldObject", "value": _binding},
])

test_owner_cannot_delete_a_companion if {
	_msgs(_delete) == {"RoleBinding \"tenantguard-owners\" is managed by tenantguard and cannot be deleted by \"alice\"; change the tenant registry instead"}
}

test_owner_cannot_strip_the_label if {
	count(_msgs(f.update(_binding, json.remove(_binding, ["metadata/labels"])))) == 1
}

test_owner_cannot_forge_a_companion if {
	count(_msgs(f.request("CREATE", _binding))) == 1
}

test_tenantguard_administrators_and_control_plane_may if {
	every name in ["system:serviceaccount:tenantguard-system:tenantguard", "platform-admin", "system:serviceaccount:kube-system:namespace-controller"] {
		count(_msgs(f.as_user(_delete, {"username": name}))) == 0
	}
}

test_unmanaged_objects_are_left_alone if {
	count(_msgs(f.request("CREATE", {"kind": "ConfigMap", "metadata": {"name": "c"}}))) == 0
}
