package tenantguard.rules.services_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.rules.services

_msgs(inp) := {v.msg | some v in vs} if {
	vs := services.violations with input as inp with data.tenantguard.registry as f.registry
}

_svc(spec) := {"kind": "Service", "metadata": {"name": "web"}, "spec": spec}

test_cluster_ip_passes if {
	count(_msgs(f.request("CREATE", _svc({"ports": [{"port": 80}]})))) == 0
}

test_node_port_is_denied if {
	_msgs(f.request("CREATE", _svc({"type": "NodePort"}))) == {"Service type \"NodePort\" is not allowed for tenant \"oil\"; allowed: ClusterIP"}
}

test_load_balancer_is_allowed_where_granted if {
	inp := f.in_namespace(f.request("CREATE", _svc({"type": "LoadBalancer"})), "gas-a", "gas")
	count(_msgs(inp)) == 0
	inp2 := f.in_namespace(f.request("CREATE", _svc({"type": "ExternalName", "externalName": "x.example"})), "gas-a", "gas")
	_msgs(inp2) == {"Service type \"ExternalName\" is not allowed for tenant \"gas\"; allowed: ClusterIP, LoadBalancer"}
}

test_external_ips_are_denied if {
	_msgs(f.request("CREATE", _svc({"externalIPs": ["1.2.3.4"]}))) == {"spec.externalIPs (1.2.3.4) is not allowed for tenant \"oil\"; remove it and expose the Service through an allowed type"}
}

test_update_switching_to_node_port_is_denied if {
	count(_msgs(f.update(_svc({}), _svc({"type": "NodePort"})))) == 1
}

test_update_keeping_grandfathered_fields_is_allowed if {
	old := _svc({"type": "NodePort", "externalIPs": ["1.2.3.4"]})
	new := _svc({"type": "NodePort", "externalIPs": ["1.2.3.4"], "selector": {"a": "b"}})
	count(_msgs(f.update(old, new))) == 0
}

test_update_adding_external_ips_is_denied if {
	count(_msgs(f.update(_svc({}), _svc({"externalIPs": ["1.2.3.4"]})))) == 1
}
