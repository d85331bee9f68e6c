# METADATA
# title: Container images
# description: |
#   image-registry and image-pull-policy: every container of every sort
#   (containers, initContainers, ephemeralContainers) and every image volume
#   of every pod carrier may only pull from the registries its tenant allows,
#   with the pull policies it allows. Judged on CREATE, and on UPDATE for each container that is new or
#   whose image or pull policy changed (so kubectl debug's ephemeral container
#   is judged by itself). Tenants without an images entry are unrestricted.
# custom:
#   reads: [registry.tenants.images]
#   kinds: [pod-carriers]
#   operations: [CREATE, UPDATE]
#   engines: [opa, gatekeeper, kyverno, vap]
package tenantguard.rules.images

import data.tenantguard.lib.podspec
import data.tenantguard.lib.tenancy

_policy := tenancy.tenant.images

_tenant := tenancy.namespace_tenant

_applies if {
	tenancy.in_tenant_namespace
	podspec.carries_pod_spec
	_policy
}

# What pulls an image: every container (podspec.containers), and every
# image volume (spec.volumes[].image, which the kubelet pulls as it pulls a
# container's image), the latter as a container of field "volumes" named by
# its volume. The rules read the two apart, sparing every decision a union.
_image_volumes contains {"field": "volumes", "container": _image_volume(volume)} if {
	some volume in podspec.volumes
	is_object(volume.image)
}

_image_volume(volume) := {
	"name": object.get(volume, "name", ""),
	"image": object.get(volume.image, "reference", ""),
	"imagePullPolicy": object.get(volume.image, "pullPolicy", ""),
}

_sort_name := object.union(podspec.sort_name, {"volumes": "image volume"})

# What pulls an image to judge (_applies first): all of it on CREATE, on
# UPDATE what is new or pulls a new image or with a new pull policy. The
# image is not "".
_judged(entry) if {
	entry.container.image != ""
	not _unchanged(entry)
}

_unchanged(entry) if {
	input.request.operation == "UPDATE"
	some old in _before(entry.field)
	old.name == entry.container.name
	object.get(old, "image", "") == object.get(entry.container, "image", "")
	object.get(old, "imagePullPolicy", "") == object.get(entry.container, "imagePullPolicy", "")
}

# The containers of a field before the update, or its image volumes.
_before(field) := object.get(podspec.old_spec, field, []) if field != "volumes"

_before("volumes") := [_image_volume(volume) |
	some volume in object.get(podspec.old_spec, "volumes", [])
	is_object(volume.image)
]

# METADATA
# title: Image registries
# description: |
#   Every container's image, normalized as the container runtime reads it
#   (a bare nginx is docker.io/library/nginx), must lie under one of
#   images.allowedRegistries, matched at a path boundary, or match
#   images.allowedRegex (tested against the normalized reference, tag and
#   digest included).
# custom:
#   id: image-registry
violations contains {"id": "image-registry", "msg": msg} if {
	_applies
	_restricts_registries
	some entry in podspec.containers
	msg := _registry_refusal(entry)
}

violations contains {"id": "image-registry", "msg": msg} if {
	_applies
	_restricts_registries
	some entry in _image_volumes
	msg := _registry_refusal(entry)
}

_registry_refusal(entry) := msg if {
	_judged(entry)
	image := entry.container.image
	not _under_allowed_prefix(image)
	ref := _reference(image)
	not _registry_allowed(ref)
	msg := sprintf("image %q of %s %q in %s is not from a registry allowed for tenant %q; allowed: %s", [ref.text, _sort_name[entry.field], entry.container.name, tenancy.object_text, _tenant, _registries_text])
}

# METADATA
# title: Image pull policies
# description: |
#   Every container's effective pull policy (imagePullPolicy, or when it is
#   absent Always for :latest and untagged images and IfNotPresent otherwise,
#   as the API server defaults it) must be one of images.allowedPullPolicies.
# custom:
#   id: image-pull-policy
violations contains {"id": "image-pull-policy", "msg": msg} if {
	_applies
	count(object.get(_policy, "allowedPullPolicies", [])) > 0
	some entry in podspec.containers
	msg := _pull_refusal(entry)
}

violations contains {"id": "image-pull-policy", "msg": msg} if {
	_applies
	count(object.get(_policy, "allowedPullPolicies", [])) > 0
	some entry in _image_volumes
	msg := _pull_refusal(entry)
}

_pull_refusal(entry) := msg if {
	_judged(entry)
	image := entry.container.image
	pull := _pull_policy(entry.container, image)
	not pull in _policy.allowedPullPolicies
	msg := sprintf("%s %q in %s pulls image %q with imagePullPolicy %s, which is not allowed for tenant %q; allowed: %s", [_sort_name[entry.field], entry.container.name, tenancy.object_text, image, pull, _tenant, concat(", ", _policy.allowedPullPolicies)])
}

_restricts_registries if count(object.get(_policy, "allowedRegistries", [])) > 0

_restricts_registries if object.get(_policy, "allowedRegex", "") != ""

# The fast path of the common case, without parsing the reference: the
# image, with Docker Hub's host and library/ put in front when it names no
# host, lies under an allowed prefix. (A reference naming its host is
# normalized as written but for index.docker.io, which no allowed prefix
# names.) Every other case takes _reference.
_under_allowed_prefix(image) if {
	written := _with_hub(image)
	some prefix in _policy.allowedRegistries
	startswith(written, concat("", [prefix, "/"]))
}

_with_hub(image) := concat("/", ["docker.io/library", image]) if {
	not contains(image, "/")
} else := image if {
	_is_host(substring(image, 0, indexof(image, "/")))
} else := concat("/", ["docker.io", image])

_registry_allowed(ref) if {
	some prefix in _policy.allowedRegistries
	startswith(concat("", [ref.repository, "/"]), concat("", [prefix, "/"]))
}

_registry_allowed(ref) if {
	_policy.allowedRegex != ""
	regex.match(_policy.allowedRegex, ref.text)
}

_registries_text := tenancy.allowed_text({
	"allowed": object.get(_policy, "allowedRegistries", []),
	"allowedRegex": object.get(_policy, "allowedRegex", ""),
})

# The effective pull policy; the image is parsed only when the container
# names none (the API server has defaulted it by the time a webhook sees it).
_pull_policy(container, _) := container.imagePullPolicy if container.imagePullPolicy != ""

_pull_policy(container, image) := _default_pull_policy(_reference(image)) if object.get(container, "imagePullPolicy", "") == ""

_default_pull_policy(ref) := "Always" if _latest(ref)

_default_pull_policy(ref) := "IfNotPresent" if not _latest(ref)

_latest(ref) if ref.tag == "latest"

_latest(ref) if {
	ref.tag == ""
	ref.digest == ""
}

# METADATA
# description: |
#   An image reference normalized as the container runtime reads it:
#   repository (registry host included: docker.io when the first component
#   names no host, with library/ for official images), tag, digest, and the
#   whole as text.
_reference(image) := {"repository": repository, "tag": tag, "digest": digest, "text": text} if {
	[name, digest] := _cut(image, "@")
	segments := split(name, "/")
	last := segments[count(segments) - 1]
	[_, tag] := _cut(last, ":")
	path := substring(name, 0, (count(name) - count(tag)) - count([1 | tag != ""]))
	repository := _with_host(path)
	text := concat("", [repository, _suffix(":", tag), _suffix("@", digest)])
}

_cut(s, sep) := [substring(s, 0, i), substring(s, i + 1, -1)] if {
	i := indexof(s, sep)
	i >= 0
} else := [s, ""]

_suffix(_, "") := ""

_suffix(sep, value) := concat("", [sep, value]) if value != ""

_with_host(path) := repository if {
	[first, rest] := _cut(path, "/")
	rest != ""
	_is_host(first)
	repository := _docker_hub(first, rest)
} else := concat("/", ["docker.io", path]) if {
	contains(path, "/")
} else := concat("/", ["docker.io/library", path])

_is_host(first) if contains(first, ".")

_is_host(first) if contains(first, ":")

_is_host("localhost")

_is_host(first) if lower(first) != first

_docker_hub(host, rest) := concat("/", [host, rest]) if not host in {"docker.io", "index.docker.io"}

_docker_hub(host, rest) := concat("/", ["docker.io", rest]) if {
	host in {"docker.io", "index.docker.io"}
	contains(rest, "/")
}

_docker_hub(host, rest) := concat("/", ["docker.io/library", rest]) if {
	host in {"docker.io", "index.docker.io"}
	not contains(rest, "/")
}
