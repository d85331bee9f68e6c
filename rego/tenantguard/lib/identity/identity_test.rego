package tenantguard.lib.identity_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.lib.identity

_input(info) := {"request": {"userInfo": info}}

test_administrator_by_user_name if {
	identity.is_admin with input as _input({"username": "platform-admin"})
		with data.tenantguard.registry as f.registry
}

test_administrator_by_group if {
	identity.is_admin with input as _input({"username": "root", "groups": ["system:masters"]})
		with data.tenantguard.registry as f.registry
}

test_owner_is_not_administrator if {
	not identity.is_admin with input as _input(f.user("alice"))
		with data.tenantguard.registry as f.registry
}

test_owned_tenants_come_from_user_and_groups if {
	owned := identity.owned_tenants with input as _input({"username": "carol", "groups": ["gas-team"]})
		with data.tenantguard.registry as f.registry
	owned == {"gas", "oil"}
}

test_service_account_owner_matches_its_user_name if {
	owned := identity.owned_tenants with input as _input({"username": "system:serviceaccount:oil-ci:deployer"})
		with data.tenantguard.registry as f.registry
	owned == {"oil"}
}

test_manager_identity if {
	identity.is_manager with input as _input({"username": "system:serviceaccount:tenantguard-system:tenantguard"})
		with data.tenantguard.runtime.managers as {"system:serviceaccount:tenantguard-system:tenantguard": true}
}

test_control_plane_identities if {
	every name in ["system:kube-controller-manager", "system:serviceaccount:kube-system:namespace-controller"] {
		identity.is_control_plane with input as _input({"username": name})
	}
	every name in ["alice", "system:serviceaccount:oil-dev:default", "", "system:anonymous", "system:kube-proxy", "system:node:worker-1", "system:kube-controller-manager-lookalike"] {
		not identity.is_control_plane with input as _input({"username": name})
	}
}

test_missing_user_info_is_nobody if {
	identity.username == "" with input as {"request": {}}
	identity.groups == [] with input as {"request": {}}
}
