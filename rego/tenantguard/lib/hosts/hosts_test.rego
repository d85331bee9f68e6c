package tenantguard.lib.hosts_test

import data.tenantguard.lib.hosts

_listener_set(parent) := {"spec": {"parentRef": parent, "listeners": [
	{"name": "https", "protocol": "HTTPS", "hostname": "Shop.Oil.example.com"},
	{"name": "wild", "protocol": "HTTPS", "hostname": "*.oil.example.com"},
	{"name": "any", "protocol": "HTTP"},
]}}

test_a_listener_set_on_a_gateway_of_another_namespace_serves_its_listeners_hosts if {
	every kind in ["ListenerSet", "XListenerSet"] {
		hosts.served(kind, "oil-dev", _listener_set({"name": "shared", "namespace": "infra"})) == {"shop.oil.example.com", "*.oil.example.com"}
	}
}

test_a_listener_set_on_a_gateway_of_its_own_namespace_serves_none if {
	every kind in ["ListenerSet", "XListenerSet"] {
		hosts.served(kind, "oil-dev", _listener_set({"name": "own"})) == set()
		hosts.served(kind, "oil-dev", _listener_set({"name": "own", "namespace": "oil-dev"})) == set()
		hosts.served(kind, "oil-dev", _listener_set({"name": "own", "namespace": ""})) == set()
	}
}

test_an_ingress_serves_its_rules_hosts_and_a_route_its_hostnames if {
	hosts.served("Ingress", "oil-dev", {"spec": {"rules": [{"host": "A.oil.example.com"}, {}], "tls": [{"hosts": ["b.oil.example.com"]}]}}) == {"a.oil.example.com"}
	hosts.served("HTTPRoute", "oil-dev", {"spec": {"hostnames": ["C.oil.example.com", ""], "parentRefs": [{"name": "shared", "namespace": "infra"}]}}) == {"c.oil.example.com"}
}

test_the_kinds_are_keyed_as_requests_name_them if {
	every key, k in hosts.kinds {
		key == concat("/", [k.group, k.kind])
	}
}
