# METADATA
# title: StorageClasses
# description: |
#   storage-class: claims in tenant namespaces may only use the StorageClasses the
#   tenant allows, wherever a claim is declared: PersistentVolumeClaims,
#   StatefulSet volumeClaimTemplates, and generic ephemeral volumes of any pod
#   spec. The class is read as the API server reads it: the legacy annotation
#   first, then spec.storageClassName; "" (no class) is a name like any other.
#   A claim created without a class gets the tenant default; for a tenant
#   with no default such a claim is refused (created, or made classless or
#   added by an update), since it would bind to a volume
#   without a class or, later, take the cluster default whatever it is.
# custom:
#   reads: [registry.tenants.storageClasses]
#   kinds: [PersistentVolumeClaim, pod-carriers]
#   operations: [CREATE, UPDATE]
#   engines: [opa, gatekeeper, kyverno, vap]
package tenantguard.rules.storage

import data.tenantguard.lib.podspec
import data.tenantguard.lib.tenancy

_annotation := "volume.beta.kubernetes.io/storage-class"

_policy := tenancy.tenant.storageClasses

_new := tenancy.new_object

_old := tenancy.old_object

# Every claim the request declares: what it is (for messages), its JSON pointer,
# the claim object (metadata + spec) now and before the request.
_claims contains {"what": sprintf("PersistentVolumeClaim %q", [tenancy.object_name]), "pointer": "", "claim": _new, "before": _old} if {
	tenancy.kind_key == "PersistentVolumeClaim"
}

_claims contains {"what": what, "pointer": pointer, "claim": claim, "before": before} if {
	tenancy.kind_key == "apps/StatefulSet"
	some i, claim in object.get(_new, ["spec", "volumeClaimTemplates"], [])
	what := sprintf("volumeClaimTemplate %q of StatefulSet %q", [object.get(claim, ["metadata", "name"], ""), tenancy.object_name])
	pointer := sprintf("/spec/volumeClaimTemplates/%d", [i])
	before := _at(object.get(_old, ["spec", "volumeClaimTemplates"], []), i)
}

_claims contains {"what": what, "pointer": pointer, "claim": claim, "before": before} if {
	podspec.carries_pod_spec
	some i, volume in podspec.volumes
	claim := volume.ephemeral.volumeClaimTemplate
	what := sprintf("ephemeral volume %q", [volume.name])
	pointer := sprintf("%s/volumes/%d/ephemeral/volumeClaimTemplate", [podspec.json_path, i])
	before := object.get(_old_volume(volume.name), ["ephemeral", "volumeClaimTemplate"], {})
}

# The volume of the same name before the update, or {}: volumes are matched
# by name, so inserting one does not shift what the others are compared with.
_old_volume(name) := volume if {
	some volume in object.get(podspec.old_spec, "volumes", [])
	volume.name == name
} else := {}

# The element at index i of an array, or {} when there is none.
_at(array, i) := array[i] if {
	is_array(array)
	array[i]
} else := {}

_applies if {
	tenancy.in_tenant_namespace
	input.request.operation in {"CREATE", "UPDATE"}
	_policy
}

# The class a claim asks for; undefined when it names none.
_class(claim) := claim.metadata.annotations[_annotation]

_class(claim) := claim.spec.storageClassName if not claim.metadata.annotations[_annotation]

# METADATA
# title: StorageClasses
# description: |
#   Claims (PersistentVolumeClaims, StatefulSet volumeClaimTemplates, generic
#   ephemeral volumes) may only use the StorageClasses of
#   storageClasses.allowed or allowedRegex; one that names none gets
#   storageClasses.default, and is refused when the tenant has none.
# custom:
#   id: storage-class
#   mutates: true
violations contains {"id": "storage-class", "msg": msg} if {
	_applies
	some entry in _claims
	class := _class(entry.claim)
	not _unchanged(entry, class)
	not tenancy.name_allowed(_policy, class)
	msg := sprintf("StorageClass %q of %s is not allowed for tenant %q; allowed: %s", [class, entry.what, tenancy.namespace_tenant, tenancy.allowed_text(_policy)])
}

violations contains {"id": "storage-class", "msg": msg} if {
	_applies
	object.get(_policy, "default", "") == ""
	some entry in _claims
	not _class(entry.claim)
	_newly_classless(entry)
	msg := sprintf("%s names no StorageClass and tenant %q has no default one; name one of: %s", [entry.what, tenancy.namespace_tenant, tenancy.allowed_text(_policy)])
}

# A claim naming no class is judged unless it named none before either: on a
# create, and on an update that adds it or drops its class.
_newly_classless(_) if input.request.operation == "CREATE"

_newly_classless(entry) if {
	input.request.operation == "UPDATE"
	not _classless_before(entry)
}

_classless_before(entry) if {
	entry.before != {}
	not _class(entry.before)
}

_unchanged(entry, class) if {
	input.request.operation == "UPDATE"
	_class(entry.before) == class
}

# METADATA
# description: JSON patch operations setting the tenant default StorageClass on created claims that name none.
mutations contains {"op": "add", "path": concat("", [entry.pointer, "/spec/storageClassName"]), "value": _policy.default} if {
	_applies
	input.request.operation == "CREATE"
	_policy.default != ""
	some entry in _claims
	not _class(entry.claim)
	is_object(entry.claim.spec)
}
