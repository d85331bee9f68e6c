# METADATA
# title: Service exposure
# description: |
#   service-type and external-ips: Services in tenant namespaces may only be of
#   the types the tenant allows, and may only set spec.externalIPs when allowed.
#   A tenant allowed LoadBalancer but not NodePort gets no node ports either:
#   its LoadBalancer Services must set allocateLoadBalancerNodePorts: false
#   (the API server defaults it to true) and name no nodePort.
#   Updates are judged when they change the type or the external IPs, or
#   make a LoadBalancer open node ports it did not open before; a
#   LoadBalancer that already opened node ports is not re-judged.
# custom:
#   reads: [registry.tenants.services]
#   kinds: [Service]
#   operations: [CREATE, UPDATE]
#   engines: [opa, gatekeeper, kyverno, vap]
package tenantguard.rules.services

import data.tenantguard.lib.tenancy

_allow := tenancy.tenant.services

_flags := {
	"NodePort": "allowNodePort",
	"LoadBalancer": "allowLoadBalancer",
	"ExternalName": "allowExternalName",
}

_applies if {
	tenancy.kind_key == "Service"
	tenancy.in_tenant_namespace
	input.request.operation in {"CREATE", "UPDATE"}
}

_type(service) := object.get(service, ["spec", "type"], "ClusterIP")

# METADATA
# title: Service types
# description: |
#   Services may only be NodePort, LoadBalancer or ExternalName when the
#   tenant allows that type (services.allowNodePort, allowLoadBalancer,
#   allowExternalName); a LoadBalancer of a tenant without NodePort opens no
#   node ports.
# custom:
#   id: service-type
violations contains {"id": "service-type", "msg": msg} if {
	_applies
	type := _type(tenancy.new_object)
	_flags[type]
	not _allow[_flags[type]]
	not _type_unchanged
	msg := sprintf("Service type %q is not allowed for tenant %q; allowed: %s", [type, tenancy.namespace_tenant, _allowed_types])
}

# METADATA
# title: External IPs
# description: Services may only set spec.externalIPs when the tenant sets services.allowExternalIPs.
# custom:
#   id: external-ips
violations contains {"id": "external-ips", "msg": msg} if {
	_applies
	not _allow.allowExternalIPs
	ips := object.get(tenancy.new_object, ["spec", "externalIPs"], [])
	count(ips) > 0
	not _ips_unchanged
	msg := sprintf("spec.externalIPs (%s) of %s is not allowed for tenant %q; remove it and expose the Service through an allowed type", [concat(", ", [sprintf("%q", [ip]) | some ip in ips]), tenancy.object_text, tenancy.namespace_tenant])
}

violations contains {"id": "service-type", "msg": msg} if {
	_applies
	_type(tenancy.new_object) == "LoadBalancer"
	_allow.allowLoadBalancer
	not _allow.allowNodePort
	_opens_node_ports(tenancy.new_object)
	not _node_ports_unchanged
	msg := sprintf("LoadBalancer Service %q would open node ports, which tenant %q may not use; set spec.allocateLoadBalancerNodePorts: false and name no nodePort", [tenancy.object_name, tenancy.namespace_tenant])
}

# A Service opens node ports when it has the API server allocate them (the
# default for LoadBalancer) or names one.
_opens_node_ports(service) if object.get(service, ["spec", "allocateLoadBalancerNodePorts"], true) != false

_opens_node_ports(service) if {
	some port in object.get(service, ["spec", "ports"], [])
	object.get(port, "nodePort", 0) != 0
}

_node_ports_unchanged if {
	input.request.operation == "UPDATE"
	_type(tenancy.old_object) == "LoadBalancer"
	_opens_node_ports(tenancy.old_object)
}

_external_ips(service) := object.get(service, ["spec", "externalIPs"], [])

# UPDATEs that leave the judged field as it was are not re-judged.
_type_unchanged if {
	input.request.operation == "UPDATE"
	_type(tenancy.new_object) == _type(tenancy.old_object)
}

_ips_unchanged if {
	input.request.operation == "UPDATE"
	_external_ips(tenancy.new_object) == _external_ips(tenancy.old_object)
}

_allowed_types := concat(", ", array.concat(["ClusterIP"], [type |
	some type in ["NodePort", "LoadBalancer", "ExternalName"]
	_allow[_flags[type]]
]))
