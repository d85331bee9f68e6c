# METADATA
# title: Host access
# description: |
#   host-path, host-network, host-namespaces, host-ports and privileged: pods in
#   tenant namespaces cannot reach the node unless their tenant allows it. Applies
#   to every kind that carries a pod spec, to every container sort, on CREATE and
#   on any UPDATE that changes the pod spec, whoever sends it.
# custom:
#   reads: [registry.tenants.pods]
#   gatekeeperTemplate: rule
#   kinds: [pod-carriers]
#   operations: [CREATE, UPDATE]
#   engines: [opa, gatekeeper, kyverno, vap]
package tenantguard.rules.pods

import data.tenantguard.lib.podspec
import data.tenantguard.lib.tenancy

_applies if {
	tenancy.in_tenant_namespace
	podspec.carries_pod_spec
	podspec.spec_changed
}

_allow := tenancy.tenant.pods

_tenant := tenancy.namespace_tenant

# METADATA
# title: hostNetwork
# description: |
#   Pods may not share the node's network namespace unless the tenant sets
#   pods.allowHostNetwork.
# custom:
#   id: host-network
#   reads: [registry.tenants.pods.allowHostNetwork]
violations contains {"id": "host-network", "msg": msg} if {
	_applies
	podspec.spec.hostNetwork == true
	not _allow.allowHostNetwork
	msg := sprintf("hostNetwork of %s is not allowed for tenant %q; use the pod network and expose ports through a Service", [tenancy.object_text, _tenant])
}

# METADATA
# title: hostPID and hostIPC
# description: |
#   Pods may not share the node's process or IPC namespace unless the tenant
#   sets pods.allowHostPID or pods.allowHostIPC.
# custom:
#   id: host-namespaces
#   reads: [registry.tenants.pods.allowHostPID, registry.tenants.pods.allowHostIPC]
violations contains {"id": "host-namespaces", "msg": msg} if {
	_applies
	some field, allowed in {"hostPID": "allowHostPID", "hostIPC": "allowHostIPC"}
	podspec.spec[field] == true
	not _allow[allowed]
	msg := sprintf("%s of %s is not allowed for tenant %q; remove it so the pod keeps its own namespaces", [field, tenancy.object_text, _tenant])
}

# METADATA
# title: hostPort
# description: |
#   Containers of every sort may not bind node ports (hostPort) unless the
#   tenant sets pods.allowHostPorts.
# custom:
#   id: host-ports
#   reads: [registry.tenants.pods.allowHostPorts]
violations contains {"id": "host-ports", "msg": msg} if {
	_applies
	not _allow.allowHostPorts
	some entry in podspec.containers
	some port in object.get(entry.container, "ports", [])
	object.get(port, "hostPort", 0) != 0
	msg := sprintf("%s %q of %s asks for hostPort %v, which is not allowed for tenant %q; expose the port through a Service instead", [podspec.sort_name[entry.field], entry.container.name, tenancy.object_text, port.hostPort, _tenant])
}

# METADATA
# title: Privileged containers
# description: |
#   Containers of every sort may not be privileged, and pods may not be
#   Windows hostProcess pods, unless the tenant sets pods.allowPrivileged.
# custom:
#   id: privileged
#   reads: [registry.tenants.pods.allowPrivileged]
violations contains {"id": "privileged", "msg": msg} if {
	_applies
	not _allow.allowPrivileged
	some entry in podspec.containers
	entry.container.securityContext.privileged == true
	msg := sprintf("%s %q of %s is privileged, which is not allowed for tenant %q; remove securityContext.privileged", [podspec.sort_name[entry.field], entry.container.name, tenancy.object_text, _tenant])
}

violations contains {"id": "privileged", "msg": msg} if {
	_applies
	not _allow.allowPrivileged
	_host_process
	msg := sprintf("Windows hostProcess of %s is not allowed for tenant %q; remove securityContext.windowsOptions.hostProcess", [tenancy.object_text, _tenant])
}

# METADATA
# title: hostPath volumes
# description: |
#   Pods may not mount the node's files (hostPath volumes) unless the tenant
#   sets pods.allowHostPath, or the path lies under one of
#   pods.allowedHostPaths (read-only grants only for read-only mounts).
# custom:
#   id: host-path
#   reads: [registry.tenants.pods.allowHostPath, registry.tenants.pods.allowedHostPaths]
violations contains {"id": "host-path", "msg": msg} if {
	_applies
	not _allow.allowHostPath
	some volume in podspec.volumes
	path := volume.hostPath.path
	count(_grants(path)) == 0
	msg := sprintf("hostPath volume %q (path %q) of %s is not allowed for tenant %q; allowed: %s", [volume.name, path, tenancy.object_text, _tenant, _paths_text])
}

violations contains {"id": "host-path", "msg": msg} if {
	_applies
	not _allow.allowHostPath
	some volume in podspec.volumes
	path := volume.hostPath.path
	grants := _grants(path)
	count(grants) > 0
	every grant in grants {
		grant.readOnly == true
	}
	some entry in podspec.containers
	some mount in object.get(entry.container, "volumeMounts", [])
	mount.name == volume.name
	not mount.readOnly == true
	msg := sprintf("hostPath volume %q (path %q) of %s may only be mounted read-only for tenant %q, but %s %q mounts it writable; set readOnly: true on the mount", [volume.name, path, tenancy.object_text, _tenant, podspec.sort_name[entry.field], entry.container.name])
}

_host_process if podspec.spec.securityContext.windowsOptions.hostProcess == true

_host_process if {
	some entry in podspec.containers
	entry.container.securityContext.windowsOptions.hostProcess == true
}

# The allowedHostPaths entries that cover a path, compared segment by segment
# so that "/var/logs" is not under "/var/log". A path with ".." is covered by
# nothing.
_grants(path) := {grant |
	startswith(path, "/")
	segments := _segments(path)
	not ".." in segments
	some grant in _allow.allowedHostPaths
	prefix := _segments(grant.pathPrefix)
	count(segments) >= count(prefix)
	array.slice(segments, 0, count(prefix)) == prefix
}

_segments(path) := [segment |
	some segment in split(path, "/")
	not segment in {"", "."}
]

_paths_text := concat(", ", [text |
	some grant in _allow.allowedHostPaths
	text := _grant_text(grant)
]) if {
	count(_allow.allowedHostPaths) > 0
} else := "no hostPath volumes; use emptyDir or a PersistentVolumeClaim"

_grant_text(grant) := sprintf("%s (read-only)", [grant.pathPrefix]) if grant.readOnly == true

_grant_text(grant) := grant.pathPrefix if not grant.readOnly == true
