# METADATA
# title: Tenant lifecycle
# description: |
#   tenant-cordoned and namespace-deletion: a platform team freezes a tenant
#   (an incident, an unpaid bill, a migration) and keeps a tenant's namespaces
#   from being deleted by mistake. Administrators, tenantguard itself and the
#   control plane (whose controllers keep the tenant's running workloads
#   healthy) are exempt, and from a cordon only, the requesters of
#   settings.cordonExempt (cluster add-ons such as cert-manager).
# custom:
#   reads: [registry.administrators, registry.cordonExempt, registry.tenants.cordoned, registry.tenants.preventNamespaceDeletion, runtime.managers]
#   engines: [opa, gatekeeper, kyverno, vap]
package tenantguard.rules.lifecycle

import data.tenantguard.lib.identity
import data.tenantguard.lib.tenancy

_exempt if identity.is_admin

_exempt if identity.is_manager

_exempt if identity.is_control_plane

_exempt if identity.listed(data.tenantguard.registry.cordonExempt)

_namespace if tenancy.kind_key == "Namespace"

# The tenants a Namespace request writes into: the tenant it is labelled
# for, before and after (the mutating webhook has labelled a created one).
_namespace_tenants contains tenant if {
	some obj in [tenancy.new_object, tenancy.old_object]
	tenant := obj.metadata.labels[tenancy.tenant_label]
}

# Kinds a cordon leaves alone: a running workload's events and leader
# election.
_uncordoned := {"Event", "events.k8s.io/Event", "coordination.k8s.io/Lease"}

# An object being deleted is still changed while it goes: whoever holds its
# finalizers removes them, which the delete needs to finish. An update of
# one that removes a finalizer passes (the API server lets none be added
# to it then).
_finalizer_removed if {
	tenancy.old_object.metadata.deletionTimestamp
	some finalizer in object.get(tenancy.old_object, ["metadata", "finalizers"], [])
	not finalizer in object.get(tenancy.new_object, ["metadata", "finalizers"], [])
}

# A namespace being deleted loses its own finalizers (spec.finalizers,
# through namespaces/finalize) the same way, by the controllers that hold
# them, which need not be the control plane's.
_finalizer_removed if {
	tenancy.old_object.metadata.deletionTimestamp
	some finalizer in object.get(tenancy.old_object, ["spec", "finalizers"], [])
	not finalizer in object.get(tenancy.new_object, ["spec", "finalizers"], [])
}

_verb := "created" if input.request.operation == "CREATE"

_verb := "changed" if input.request.operation == "UPDATE"

# METADATA
# title: Cordoned tenants
# description: |
#   While a tenant is cordoned, nothing in its namespaces is created or
#   changed, nor are namespaces created for it; deletes pass, so that a
#   frozen tenant can still shrink, and so do updates that remove a
#   finalizer of an object being deleted. Events and Leases are left alone,
#   so running workloads keep their leader election. Administrators,
#   tenantguard, the control plane and the requesters of
#   settings.cordonExempt (add-ons such as cert-manager) are exempt.
# custom:
#   id: tenant-cordoned
#   kinds: [all, Namespace]
#   operations: [CREATE, UPDATE]
#   audit: false
violations contains {"id": "tenant-cordoned", "msg": msg} if {
	input.request.operation in {"CREATE", "UPDATE"}
	not _namespace
	tenancy.tenant.cordoned
	not tenancy.kind_key in _uncordoned
	not _finalizer_removed
	not _exempt
	msg := _cordon_message(tenancy.namespace_tenant)
}

violations contains {"id": "tenant-cordoned", "msg": msg} if {
	input.request.operation in {"CREATE", "UPDATE"}
	_namespace
	some tenant in _namespace_tenants
	tenancy.config(tenant).cordoned
	not _finalizer_removed
	not _exempt
	msg := _cordon_message(tenant)
}

_cordon_message(tenant) := sprintf("tenant %q is cordoned, so %s cannot be %s until an administrator lifts the cordon; deleting is allowed", [tenant, _where, _verb])

_sub := object.get(input.request, "subResource", "")

_where := tenancy.object_text if _namespace

_where := sprintf("%s in namespace %q", [tenancy.object_text, input.request.namespace]) if {
	not _namespace
	_sub == ""
}

# A subresource (a workload's scale, a pod's resize) names its object by
# resource: "the scale of deployments "web"".
_where := sprintf("the %s of %s %q in namespace %q", [_sub, input.request.resource.resource, tenancy.object_name, input.request.namespace]) if {
	not _namespace
	_sub != ""
}

# METADATA
# title: Namespace deletion protection
# description: |
#   Only administrators delete the namespaces of a tenant with
#   preventNamespaceDeletion.
# custom:
#   id: namespace-deletion
#   kinds: [Namespace]
#   operations: [DELETE]
#   audit: false
violations contains {"id": "namespace-deletion", "msg": msg} if {
	_namespace
	input.request.operation == "DELETE"
	tenant := _deleted_tenant
	tenancy.config(tenant).preventNamespaceDeletion
	not identity.is_admin
	msg := sprintf("namespace %q of tenant %q is protected from deletion; only administrators delete it", [tenancy.object_name, tenant])
}

# The tenant of a namespace being deleted: its label as the request carries
# it, else as the view knows it.
_deleted_tenant := tenant if {
	tenant := tenancy.old_object.metadata.labels[tenancy.tenant_label]
} else := tenancy.namespace_tenant
