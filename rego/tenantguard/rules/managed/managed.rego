# METADATA
# title: Companion resources
# description: |
#   managed-resource: objects that tenantguard creates in tenant namespaces
#   (labelled app.kubernetes.io/managed-by=tenantguard) cannot be created,
#   changed or deleted by anyone but tenantguard, administrators and
#   control-plane components; tenant owners holding admin in their namespaces
#   included. Removing or forging the label is a change like any other.
package tenantguard.rules.managed

import data.tenantguard.lib.identity
import data.tenantguard.lib.tenancy

_label := "app.kubernetes.io/managed-by"

_verbs := {"CREATE": "created", "UPDATE": "changed", "DELETE": "deleted"}

_managed if tenancy.new_object.metadata.labels[_label] == "tenantguard"

_managed if tenancy.old_object.metadata.labels[_label] == "tenantguard"

_trusted if identity.is_admin

_trusted if identity.is_manager

_trusted if identity.is_control_plane

# METADATA
# title: Companion resources
# description: |
#   The companions tenantguard generates in tenant namespaces (labelled
#   app.kubernetes.io/managed-by=tenantguard) cannot be created, changed or
#   deleted by tenants; their kinds are the generator's, and a test holds
#   them equal. The label forged on any other kind is no one's concern:
#   tenantguard neither keeps nor prunes other kinds.
# custom:
#   id: managed-resource
#   reads: [registry.administrators, runtime.managers]
#   kinds: [ResourceQuota, LimitRange, networking.k8s.io/NetworkPolicy, rbac.authorization.k8s.io/RoleBinding]
#   subresources: [resourcequotas/status]
#   operations: [CREATE, UPDATE, DELETE]
#   engines: [opa, gatekeeper, kyverno, vap]
#   audit: false
violations contains {"id": "managed-resource", "msg": msg} if {
	tenancy.in_tenant_namespace
	_managed
	not _trusted
	msg := sprintf("%s %q is managed by tenantguard and cannot be %s by %q; change the tenant registry instead", [input.request.kind.kind, tenancy.object_name, _verbs[input.request.operation], identity.username])
}
