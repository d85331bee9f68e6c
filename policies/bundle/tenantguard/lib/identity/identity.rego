# METADATA
# title: Requester identity
# description: |
#   Who sent the request, as the tenant rules need to know it: administrators,
#   the tenants a requester owns, tenantguard's own service account, and
#   control-plane components. Owners of kind ServiceAccount are matched by their
#   full user name (system:serviceaccount:NAMESPACE:NAME).
package tenantguard.lib.identity

_registry := data.tenantguard.registry

# METADATA
# description: The requester's user name, or "" when the request carries none.
username := object.get(input.request, ["userInfo", "username"], "")

# METADATA
# description: The requester's groups.
groups := object.get(input.request, ["userInfo", "groups"], [])

# METADATA
# description: |
#   The requester is in list, by user name or by group: a list of subjects
#   as the compiled registry holds them, {"users": {NAME: true}, "groups":
#   {NAME: true}} (administrators, cordonExempt).
listed(list) if list.users[username]

listed(list) if {
	some group in groups
	list.groups[group]
}

# METADATA
# description: The requester is a tenantguard administrator, by user name or by group.
is_admin if listed(_registry.administrators)

# METADATA
# description: The tenants the requester owns, directly or through a group.
owned_tenants contains tenant if some tenant in _registry.owners.users[username]

owned_tenants contains tenant if {
	some group in groups
	some tenant in _registry.owners.groups[group]
}

# METADATA
# description: The requester is tenantguard itself (the identity that applies companion resources).
is_manager if data.tenantguard.runtime.managers[username]

# METADATA
# description: |
#   The requester is a control-plane component: the API server, the
#   controller manager or the scheduler, or a service account of kube-system
#   (garbage collector, namespace controller). Tenants cannot authenticate as
#   any of them. Other system: users are not trusted: system:anonymous is
#   what an unauthenticated request is, and a tenant may bind roles to it.
is_control_plane if username in _control_plane_users

is_control_plane if startswith(username, "system:serviceaccount:kube-system:")

_control_plane_users := {"system:apiserver", "system:kube-controller-manager", "system:kube-scheduler"}
