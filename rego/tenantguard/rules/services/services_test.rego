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
	inp := f.in_namespace(f.request("CREATE", _svc({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false})), "gas-a", "gas")
	count(_msgs(inp)) == 0
	inp2 := f.in_namespace(f.request("CREATE", _svc({"type": "ExternalName", "externalName": "x.example"})), "gas-a", "gas")
	_msgs(inp2) == {"Service type \"ExternalName\" is not allowed for tenant \"gas\"; allowed: ClusterIP, LoadBalancer"}
}

test_external_ips_are_denied if {
	_msgs(f.request("CREATE", _svc({"externalIPs": ["1.2.3.4", "5.6.7.8"]}))) == {"spec.externalIPs (\"1.2.3.4\", \"5.6.7.8\") of Service \"web\" is not allowed for tenant \"oil\"; remove it and expose the Service through an allowed type"}
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

test_load_balancer_opens_no_node_ports_where_node_port_is_refused if {
	want := {"LoadBalancer Service \"web\" would open node ports, which tenant \"gas\" may not use; set spec.allocateLoadBalancerNodePorts: false and name no nodePort"}
	every spec in [
		{"type": "LoadBalancer"},
		{"type": "LoadBalancer", "allocateLoadBalancerNodePorts": true},
		{"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false, "ports": [{"port": 80, "nodePort": 30080}]},
	] {
		_msgs(f.in_namespace(f.request("CREATE", _svc(spec)), "gas-a", "gas")) == want
	}
	switched := f.update(_svc({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false}), _svc({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": true}))
	_msgs(f.in_namespace(switched, "gas-a", "gas")) == want
}

test_load_balancer_keeping_its_node_ports_is_not_rejudged if {
	old := _svc({"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": 30080}]})
	new := _svc({"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": 30080}], "selector": {"a": "b"}})
	count(_msgs(f.in_namespace(f.update(old, new), "gas-a", "gas"))) == 0
}
