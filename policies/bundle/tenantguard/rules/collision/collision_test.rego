package tenantguard.rules.collision_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.rules.collision

_registry(scope) := json.patch(f.registry, [{"op": "add", "path": "/tenants/oil/ingress", "value": {"hostnameCollision": scope}}])

_ingress := {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"}, "spec": {"rules": [{"host": "shop.oil.example.com"}]}}

_holder(kind, namespace, name, tenant) := {"group": "gateway.networking.k8s.io", "kind": kind, "namespace": namespace, "name": name, "tenant": tenant}

# alice's Ingress web in oil-dev, whose host the holders serve
_request(operation, holders) := object.union(
	f.request_for("networking.k8s.io", "Ingress", "ingresses", operation, _ingress),
	{"cluster": {"hosts": {"shop.oil.example.com": holders}}},
)

_msgs(scope, inp) := {v.msg | some v in vs} if {
	vs := collision.violations with input as inp with data.tenantguard.registry as _registry(scope)
}

_gas := _holder("HTTPRoute", "gas-apps", "shop", "gas")

_oil_prod := _holder("HTTPRoute", "oil-prod", "shop", "oil")

_oil_dev := _holder("HTTPRoute", "oil-dev", "shop", "oil")

test_a_host_another_tenant_serves_is_refused_naming_its_holder if {
	_msgs("cluster", _request("CREATE", [_gas])) == {`host "shop.oil.example.com" of Ingress "web" is already served by HTTPRoute "shop" in namespace "gas-apps"; choose another host`}
}

test_scope_cluster_refuses_any_other_namespace_but_not_the_same if {
	count(_msgs("cluster", _request("CREATE", [_oil_prod]))) == 1
	count(_msgs("cluster", _request("CREATE", [_oil_dev]))) == 0
}

test_scope_tenant_lets_the_tenant_reuse_its_hosts if {
	count(_msgs("tenant", _request("CREATE", [_oil_prod, _oil_dev]))) == 0
	count(_msgs("tenant", _request("CREATE", [_gas]))) == 1
}

test_scope_tenant_refuses_a_host_served_outside_every_tenant if {
	count(_msgs("tenant", _request("CREATE", [_holder("Ingress", "tools", "web", "")]))) == 1
}

test_scope_namespace_refuses_even_the_same_namespace if {
	_msgs("namespace", _request("UPDATE", [_oil_dev])) == {`host "shop.oil.example.com" of Ingress "web" is already served by HTTPRoute "shop" in namespace "oil-dev"; choose another host`}
}

test_the_first_colliding_holder_is_named if {
	_msgs("tenant", _request("CREATE", [_oil_dev, _gas, _holder("TLSRoute", "gas-z", "z", "gas")])) == {`host "shop.oil.example.com" of Ingress "web" is already served by HTTPRoute "shop" in namespace "gas-apps"; choose another host`}
}

test_scope_off_and_no_ingress_policy_refuse_nothing if {
	count(_msgs("off", _request("CREATE", [_gas]))) == 0
	vs := collision.violations with input as _request("CREATE", [_gas]) with data.tenantguard.registry as f.registry
	count(vs) == 0
}

test_a_host_no_other_object_serves_passes if {
	count(_msgs("namespace", _request("CREATE", []))) == 0
	inp := f.request_for("networking.k8s.io", "Ingress", "ingresses", "CREATE", _ingress)
	count(_msgs("namespace", inp)) == 0
}

test_administrators_deletes_subresources_and_other_namespaces_are_left_alone if {
	count(_msgs("cluster", f.as_user(_request("CREATE", [_gas]), f.user("platform-admin")))) == 0
	count(_msgs("cluster", _request("DELETE", [_gas]))) == 0
	count(_msgs("cluster", object.union(_request("UPDATE", [_gas]), {"request": {"subResource": "status"}}))) == 0
	count(_msgs("cluster", f.outside(_request("CREATE", [_gas])))) == 0
}

test_a_wildcard_under_another_and_one_over_another_say_which_way if {
	under := object.union(_request("CREATE", []), {"cluster": {"hosts": {"*.a.oil.example.com": [object.union(_gas, {"host": "*.oil.example.com"})]}}})
	_msgs("cluster", under) == {`host "*.a.oil.example.com" of Ingress "web" falls under wildcard host "*.oil.example.com", already served by HTTPRoute "shop" in namespace "gas-apps"; choose another host`}
	over := object.union(_request("CREATE", []), {"cluster": {"hosts": {"*.oil.example.com": [object.union(_gas, {"host": "*.a.oil.example.com"})]}}})
	_msgs("cluster", over) == {`wildcard host "*.oil.example.com" of Ingress "web" covers host "*.a.oil.example.com", already served by HTTPRoute "shop" in namespace "gas-apps"; choose another host`}
}

test_an_update_is_judged_on_the_hosts_it_adds if {
	kept := object.union(_request("UPDATE", [_gas]), {"request": {"oldObject": _ingress}})
	count(_msgs("cluster", kept)) == 0
	added := json.patch(kept, [
		{"op": "add", "path": "/request/object/spec/rules/-", "value": {"host": "api.oil.example.com"}},
		{"op": "add", "path": "/cluster/hosts/api.oil.example.com", "value": [_gas]},
	])
	_msgs("cluster", added) == {`host "api.oil.example.com" of Ingress "web" is already served by HTTPRoute "shop" in namespace "gas-apps"; choose another host`}
}

_listener_set(parent) := {
	"apiVersion": "gateway.networking.k8s.io/v1", "kind": "ListenerSet", "metadata": {"name": "edge"},
	"spec": {"parentRef": parent, "listeners": [{"name": "https", "protocol": "HTTPS", "port": 443, "hostname": "shop.oil.example.com"}]},
}

_listener_set_request(operation, holders) := object.union(
	f.request_for("gateway.networking.k8s.io", "ListenerSet", "listenersets", operation, _listener_set({"name": "shared", "namespace": "infra"})),
	{"cluster": {"hosts": {"shop.oil.example.com": holders}}},
)

_route_request(holders) := object.union(
	f.request_for("gateway.networking.k8s.io", "HTTPRoute", "httproutes", "CREATE", {"kind": "HTTPRoute", "metadata": {"name": "shop"}, "spec": {"hostnames": ["shop.oil.example.com"]}}),
	{"cluster": {"hosts": {"shop.oil.example.com": holders}}},
)

_oil_dev_listener_set := _holder("ListenerSet", "oil-dev", "edge", "oil")

test_a_listener_set_on_a_shared_gateway_may_not_bind_a_host_another_namespace_serves if {
	_msgs("cluster", _listener_set_request("CREATE", [_gas])) == {`host "shop.oil.example.com" of ListenerSet "edge" is already served by HTTPRoute "shop" in namespace "gas-apps"; choose another host`}
	_msgs("cluster", _route_request([object.union(_gas, {"kind": "ListenerSet", "name": "edge"})])) == {`host "shop.oil.example.com" of HTTPRoute "shop" is already served by ListenerSet "edge" in namespace "gas-apps"; choose another host`}
}

test_in_scope_namespace_a_route_and_the_listener_set_it_attaches_to_share_their_host if {
	count(_msgs("namespace", _route_request([_oil_dev_listener_set]))) == 0
	count(_msgs("namespace", _listener_set_request("CREATE", [_oil_dev]))) == 0
	count(_msgs("namespace", _route_request([_oil_dev_x_listener_set]))) == 0
	count(_msgs("namespace", _x_listener_set_request([_oil_dev]))) == 0
}

_oil_dev_x_listener_set := object.union(_oil_dev_listener_set, {"group": "gateway.networking.x-k8s.io", "kind": "XListenerSet"})

_x_listener_set_request(holders) := object.union(
	f.request_for("gateway.networking.x-k8s.io", "XListenerSet", "xlistenersets", "CREATE", object.union(
		_listener_set({"name": "shared", "namespace": "infra"}),
		{"apiVersion": "gateway.networking.x-k8s.io/v1alpha1", "kind": "XListenerSet"},
	)),
	{"cluster": {"hosts": {"shop.oil.example.com": holders}}},
)

test_an_update_of_an_x_listener_set_keeping_its_hosts_passes if {
	inp := _x_listener_set_request([_gas])
	count(_msgs("cluster", inp)) == 1
	kept := json.patch(inp, [
		{"op": "replace", "path": "/request/operation", "value": "UPDATE"},
		{"op": "add", "path": "/request/oldObject", "value": inp.request.object},
	])
	count(_msgs("cluster", kept)) == 0
}

test_in_scope_namespace_two_listener_sets_or_a_listener_set_and_an_ingress_collide if {
	count(_msgs("namespace", _listener_set_request("CREATE", [_oil_dev_listener_set]))) == 1
	count(_msgs("namespace", _listener_set_request("CREATE", [_holder("Ingress", "oil-dev", "web", "oil")]))) == 1
	count(_msgs("namespace", _request("CREATE", [_oil_dev_listener_set]))) == 1
}

test_a_route_and_a_listener_set_of_other_namespaces_collide_in_scope_namespace if {
	count(_msgs("namespace", _route_request([object.union(_oil_dev_listener_set, {"namespace": "oil-prod"})]))) == 1
}
