# METADATA
# title: Namespaces of tenants
# description: |
#   Who may create, claim, relabel and delete tenant namespaces:
#   namespace-ownership, namespace-prefix, protected-namespace, namespace-quota,
#   tenant-label-immutable and protected-metadata. Administrators are exempt from
#   all of them but namespace-quota. A namespace created without the tenant label
#   gets it, so every tenant namespace is labelled.
# custom:
#   reads: [registry.tenants, registry.administrators, registry.owners, registry.serviceAccountNamespaces, registry.administratorNamespaces, registry.settings.forceTenantPrefix, registry.settings.protectedNamespaces, registry.tenants.namespaceQuota, registry.tenants.protectedLabels, registry.tenants.protectedAnnotations]
#   kinds: [Namespace]
#   engines: [opa, gatekeeper, kyverno, vap]
package tenantguard.rules.namespaces

import data.tenantguard.lib.identity
import data.tenantguard.lib.tenancy

_label := tenancy.tenant_label

_new := tenancy.new_object

_old := tenancy.old_object

_name := tenancy.object_name

_operation := input.request.operation

_is_namespace if tenancy.kind_key == "Namespace"

_creating if {
	_is_namespace
	_operation == "CREATE"
}

_new_label := _new.metadata.labels[_label]

_old_label := _old.metadata.labels[_label]

# The tenant a namespace being created by a non-administrator is meant for:
# the tenant label; else the requester's only tenant; else the owned tenant
# whose name prefixes the namespace name; else, for requesters who own nothing,
# the tenant whose prefix the name takes.
_wanted := _new_label

_wanted := tenant if {
	not _new_label
	count(identity.owned_tenants) == 1
	some tenant in identity.owned_tenants
}

_wanted := tenant if {
	not _new_label
	count(identity.owned_tenants) != 1
	tenant := tenancy.prefix_tenant(_name)
}

# METADATA
# description: The tenant a created namespace will belong to.
target := _wanted if {
	_creating
	not identity.is_admin
}

target := _new_label if {
	_creating
	identity.is_admin
}

_owned_text := concat(", ", sort([t | some t in identity.owned_tenants]))

_owns_target if target in identity.owned_tenants

_user := identity.username

# METADATA
# title: Namespace ownership
# description: |
#   Only owners of a tenant create namespaces in it (the tenant is the
#   tenant label, else the requester's only tenant, else the name's prefix),
#   and a created namespace gets the tenant label; only owners of a
#   namespace's tenant, and administrators, delete it.
# custom:
#   id: namespace-ownership
#   operations: [CREATE, DELETE]
#   mutates: true
violations contains {"id": "namespace-ownership", "msg": msg} if {
	_creating
	not identity.is_admin
	_claims_tenancy
	not _owns_target
	msg := _ownership_refusal
}

# The namespace of a ServiceAccount owner (or of a group of all of a
# namespace's ServiceAccounts) is reserved for that owner's tenant: whoever
# holds it can mint the account's tokens and act as the owner. Only an owner
# of that tenant may create it, as a namespace of that tenant; one holding
# owners of several tenants, an administrator or a cordon-exempt requester,
# only administrators create.
violations contains {"id": "namespace-ownership", "msg": msg} if {
	_creating
	not identity.is_admin
	tenants := data.tenantguard.registry.serviceAccountNamespaces[_name]
	not _reserved_for_target(tenants)
	msg := _reserved_refusal(tenants)
}

violations contains {"id": "namespace-ownership", "msg": msg} if {
	_creating
	not identity.is_admin
	data.tenantguard.registry.administratorNamespaces[_name]
	msg := sprintf("namespace %q holds ServiceAccounts the registry trusts (administrators or cordon-exempt), so only administrators may create it", [_name])
}

_reserved_for_target(tenants) if {
	count(tenants) == 1
	target == tenants[0]
	_owns_target
}

_reserved_refusal(tenants) := sprintf("namespace %q holds ServiceAccount owners of tenant %q, so only that tenant's owners may create it, in that tenant", [_name, tenants[0]]) if {
	count(tenants) == 1
} else := sprintf("namespace %q holds ServiceAccount owners of tenants %s, so only administrators may create it", [_name, concat(", ", sort(tenants))])

# A created namespace is a tenant's when it names or prefixes one, or when its
# creator owns any tenant. Others are outside tenantguard's concern.
_claims_tenancy if target

_claims_tenancy if count(identity.owned_tenants) > 0

violations contains {"id": "namespace-ownership", "msg": msg} if {
	_is_namespace
	_operation == "DELETE"
	not identity.is_admin
	tenant := _deleted_tenant
	not tenant in identity.owned_tenants
	msg := sprintf("only owners of tenant %q and administrators may delete namespace %q; %q is neither", [tenant, _name, _user])
}

# METADATA
# title: Tenant prefixes
# description: With settings.forceTenantPrefix, a tenant's namespaces are named "<tenant>-...".
# custom:
#   id: namespace-prefix
#   operations: [CREATE]
#   audit: false
violations contains {"id": "namespace-prefix", "msg": msg} if {
	_creating
	not identity.is_admin
	tenancy.settings.forceTenantPrefix
	prefix := concat("", [target, "-"])
	not startswith(_name, prefix)
	msg := sprintf("namespace %q must be named %q followed by a name, because tenant names are enforced as prefixes; e.g. \"%s%s\"", [_name, prefix, prefix, _name])
}

# METADATA
# title: Protected namespaces
# description: Namespaces matching settings.protectedNamespaces cannot be created or claimed by tenants.
# custom:
#   id: protected-namespace
#   operations: [CREATE, UPDATE]
violations contains {"id": "protected-namespace", "msg": msg} if {
	_is_namespace
	not identity.is_admin
	_tenant_bound
	some pattern in tenancy.settings.protectedNamespaces
	regex.match(pattern, _name)
	msg := sprintf("namespace %q is protected (matches %s) and cannot be created or claimed by a tenant; choose another name", [_name, pattern])
}

# METADATA
# title: Namespace quota
# description: A tenant cannot have more namespaces than its namespaceQuota.
# custom:
#   id: namespace-quota
#   operations: [CREATE]
#   engines: [opa, gatekeeper]
#   notExpressible: counting a tenant's namespaces needs the other namespaces, and an admission policy sees only the request's object
violations contains {"id": "namespace-quota", "msg": msg} if {
	_creating
	limit := tenancy.config(target).namespaceQuota
	used := tenancy.count_of(target, "namespaces")
	used + 1 > limit
	msg := sprintf("tenant %q already has %d of its %d allowed namespaces; delete one first or ask for a higher namespaceQuota", [target, used, limit])
}

# METADATA
# title: Tenant label
# description: The tenant label of a namespace cannot be added, changed or removed by non-administrators.
# custom:
#   id: tenant-label-immutable
#   operations: [UPDATE]
#   subresources: [namespaces/status, namespaces/finalize]
violations contains {"id": "tenant-label-immutable", "msg": msg} if {
	_is_namespace
	_operation == "UPDATE"
	not identity.is_admin
	before := object.get(_old, ["metadata", "labels", _label], null)
	after := object.get(_new, ["metadata", "labels", _label], null)
	before != after
	msg := sprintf("the label %q of namespace %q cannot be %s by %q; only administrators move namespaces between tenants", [_label, _name, _change_text(before, after), _user])
}

# METADATA
# title: Protected labels and annotations
# description: |
#   Non-administrators cannot add, change or remove the labels and
#   annotations of settings and the tenant's protectedLabels and
#   protectedAnnotations on namespaces.
# custom:
#   id: protected-metadata
#   operations: [CREATE, UPDATE]
#   subresources: [namespaces/status, namespaces/finalize]
#   audit: false
violations contains {"id": "protected-metadata", "msg": msg} if {
	_is_namespace
	_operation in {"CREATE", "UPDATE"}
	not identity.is_admin
	tenant := _metadata_tenant
	some field, list in {"labels": "protectedLabels", "annotations": "protectedAnnotations"}
	before := _metadata_map(_old, field)
	after := _metadata_map(_new, field)
	some key in ({k | some k, _ in before} | {k | some k, _ in after})
	key != _label
	object.get(before, key, null) != object.get(after, key, null)
	_protected(tenancy.config(tenant)[list], key)
	msg := sprintf("%s %q of namespace %q is protected and cannot be %s by %q; only administrators set it", [trim_suffix(field, "s"), key, _name, _change_text(object.get(before, key, null), object.get(after, key, null)), _user])
}

# _metadata_map is metadata.labels or metadata.annotations of an object,
# {} when absent or not a map (null clears every entry).
_metadata_map(obj, field) := m if {
	m := object.get(obj, ["metadata", field], {})
	is_object(m)
} else := {}

# METADATA
# description: JSON patch operations labelling a namespace created by an owner with its tenant.
mutations contains {"op": "add", "path": "/metadata/labels", "value": {_label: target}} if {
	_creating
	not _new_label
	_owns_target
	not _new.metadata.labels
}

mutations contains {"op": "add", "path": concat("", ["/metadata/labels/", _escaped_label]), "value": target} if {
	_creating
	not _new_label
	_owns_target
	_new.metadata.labels
}

_escaped_label := tenancy.pointer_token(_label)

_ownership_refusal := sprintf("tenant %q does not exist; label %q must name a tenant you own: %s", [target, _label, _owned_text]) if {
	target
	not data.tenantguard.registry.tenants[target]
	count(identity.owned_tenants) > 0
} else := sprintf("%q owns no tenant, so cannot create namespace %q in tenant %q; ask a platform administrator to add you as an owner", [_user, _name, target]) if {
	target
	count(identity.owned_tenants) == 0
} else := sprintf("%q is not an owner of tenant %q; allowed: tenants %s", [_user, target, _owned_text]) if {
	target
} else := sprintf("%q owns several tenants (%s) and cannot tell which one namespace %q is for; set the label %q or start the name with \"<tenant>-\"", [_user, _owned_text, _name, _label])

_deleted_tenant := _old_label

_deleted_tenant := tenant if {
	not _old_label
	tenant := input.cluster.namespace.labels[_label]
}

# A namespace that is, or is being made, a tenant's.
_tenant_bound if target

_tenant_bound if {
	_operation == "UPDATE"
	_new_label
}

_metadata_tenant := target

_metadata_tenant := _old_label if _operation == "UPDATE"

_metadata_tenant := _new_label if {
	_operation == "UPDATE"
	not _old_label
}

_protected(list, key) if key in list

_protected(list, key) if {
	some prefix in list
	endswith(prefix, "/")
	startswith(key, prefix)
}

_change_text(null, _) := "added"

_change_text(before, null) := "removed" if before != null

_change_text(before, after) := sprintf("changed from %q to %q", [before, after]) if {
	before != null
	after != null
}
