package tenantguard.rules.ingress_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.rules.ingress

_policy := {
	"classes": {"allowed": ["nginx"], "allowedRegex": "^internal-", "default": "nginx"},
	"gatewayClasses": {"allowed": ["shared"], "allowedRegex": ""},
	"hostnames": {"allowed": ["oil.example.com", "*.oil.example.com"], "allowedRegex": "^[a-z]+\\.oil\\.test$", "allowWildcard": false},
	"hostnameCollision": "off",
}

_eval(inp, policy) := {"violations": v, "mutations": m} if {
	reg := object.union(f.registry, {"tenants": {"oil": {"ingress": policy}}})
	v := ingress.violations with input as inp with data.tenantguard.registry as reg
	m := ingress.mutations with input as inp with data.tenantguard.registry as reg
}

_ingress(spec) := {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"}, "spec": spec}

_ingress_request(op, obj) := f.request_for("networking.k8s.io", "Ingress", "ingresses", op, obj)

_rules(hosts) := [{"host": h, "http": {"paths": []}} | some h in hosts]

_gateway_request(op, listeners) := f.request_for("gateway.networking.k8s.io", "Gateway", "gateways", op, {
	"kind": "Gateway", "metadata": {"name": "gw"},
	"spec": {"gatewayClassName": "shared", "listeners": listeners},
})

_route_request(kind, resource, hostnames) := f.request_for("gateway.networking.k8s.io", kind, resource, "CREATE", {
	"kind": kind, "metadata": {"name": "shop"},
	"spec": {"hostnames": hostnames},
})

test_allowed_classes_and_hosts_pass if {
	every class in ["nginx", "internal-lb"] {
		r := _eval(_ingress_request("CREATE", _ingress({"ingressClassName": class, "rules": _rules(["oil.example.com", "shop.oil.example.com", "a.b.oil.example.com", "api.oil.test"])})), _policy)
		count(r.violations) == 0
		count(r.mutations) == 0
	}
}

test_another_class_is_denied_naming_the_ingress if {
	r := _eval(_ingress_request("CREATE", _ingress({"ingressClassName": "haproxy", "rules": _rules(["oil.example.com"])})), _policy)
	r.violations == {{"id": "ingress-class", "msg": "IngressClass \"haproxy\" of Ingress \"web\" is not allowed for tenant \"oil\"; allowed: nginx, or names matching ^internal-"}}
}

test_the_legacy_annotation_is_the_class_controllers_read if {
	obj := object.union(_ingress({"rules": _rules(["oil.example.com"])}), {"metadata": {"annotations": {"kubernetes.io/ingress.class": "haproxy"}}})
	r := _eval(_ingress_request("CREATE", obj), _policy)
	{v.id | some v in r.violations} == {"ingress-class"}
	count(r.mutations) == 0
}

test_an_ingress_without_class_gets_the_default if {
	r := _eval(_ingress_request("CREATE", _ingress({"rules": _rules(["oil.example.com"])})), _policy)
	r.mutations == {{"op": "add", "path": "/spec/ingressClassName", "value": "nginx"}}
	count(r.violations) == 0
}

test_without_a_default_an_ingress_must_name_a_class if {
	policy := json.patch(_policy, [{"op": "replace", "path": "/classes/default", "value": ""}])
	r := _eval(_ingress_request("CREATE", _ingress({"rules": _rules(["oil.example.com"])})), policy)
	r.violations == {{"id": "ingress-class", "msg": "Ingress \"web\" names no IngressClass and tenant \"oil\" has no default one; name one of: nginx, or names matching ^internal-"}}
}

test_an_update_keeping_an_old_class_is_not_judged if {
	old := _ingress({"ingressClassName": "haproxy", "rules": _rules(["oil.example.com"])})
	new := json.patch(old, [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}])
	r := _eval(object.union(_ingress_request("UPDATE", new), {"request": {"oldObject": old}}), _policy)
	count(r.violations) == 0
}

test_a_host_of_another_domain_is_denied if {
	r := _eval(_ingress_request("CREATE", _ingress({"ingressClassName": "nginx", "rules": _rules(["gas.example.com"])})), _policy)
	r.violations == {{"id": "hostname", "msg": "host \"gas.example.com\" of Ingress \"web\" is not allowed for tenant \"oil\"; allowed: oil.example.com, *.oil.example.com, or names matching ^[a-z]+\\.oil\\.test$"}}
}

test_a_pattern_matches_at_a_label_boundary if {
	r := _eval(_ingress_request("CREATE", _ingress({"ingressClassName": "nginx", "rules": _rules(["evil-oil.example.com", "oil.example.com.evil.io"])})), _policy)
	{v.msg | some v in r.violations} == {
		"host \"evil-oil.example.com\" of Ingress \"web\" is not allowed for tenant \"oil\"; allowed: oil.example.com, *.oil.example.com, or names matching ^[a-z]+\\.oil\\.test$",
		"host \"oil.example.com.evil.io\" of Ingress \"web\" is not allowed for tenant \"oil\"; allowed: oil.example.com, *.oil.example.com, or names matching ^[a-z]+\\.oil\\.test$",
	}
}

test_tls_hosts_are_judged_too if {
	spec := {"ingressClassName": "nginx", "rules": _rules(["oil.example.com"]), "tls": [{"hosts": ["oil.example.com", "bank.example.com"], "secretName": "s"}]}
	r := _eval(_ingress_request("CREATE", _ingress(spec)), _policy)
	{v.id | some v in r.violations} == {"hostname"}
	some v in r.violations
	contains(v.msg, "\"bank.example.com\"")
}

test_a_wildcard_host_needs_allow_wildcard if {
	r := _eval(_ingress_request("CREATE", _ingress({"ingressClassName": "nginx", "rules": _rules(["*.oil.example.com"])})), _policy)
	r.violations == {{"id": "hostname", "msg": "wildcard host \"*.oil.example.com\" of Ingress \"web\" is not allowed for tenant \"oil\"; name each host instead"}}
	allowed := _eval(_ingress_request("CREATE", _ingress({"ingressClassName": "nginx", "rules": _rules(["*.oil.example.com", "*.shop.oil.example.com"])})), json.patch(_policy, [{"op": "replace", "path": "/hostnames/allowWildcard", "value": true}]))
	count(allowed.violations) == 0
}

test_a_wildcard_wider_than_the_tenant_is_denied_even_when_wildcards_are_allowed if {
	policy := json.patch(_policy, [{"op": "replace", "path": "/hostnames/allowWildcard", "value": true}])
	r := _eval(_ingress_request("CREATE", _ingress({"ingressClassName": "nginx", "rules": _rules(["*.example.com"])})), policy)
	{v.id | some v in r.violations} == {"hostname"}
}

test_a_rule_or_backend_without_a_host_serves_every_host_and_is_denied if {
	spec := {"ingressClassName": "nginx", "rules": [{"http": {"paths": []}}], "defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}
	r := _eval(_ingress_request("CREATE", _ingress(spec)), _policy)
	r.violations == {{"id": "hostname", "msg": "Ingress \"web\" names no host, so it would serve every host name its controller serves; name hosts of tenant \"oil\": oil.example.com, *.oil.example.com, or names matching ^[a-z]+\\.oil\\.test$"}}
}

test_an_update_adding_a_host_is_judged_on_that_host_only if {
	old := _ingress({"ingressClassName": "nginx", "rules": _rules(["legacy.example.org"])})
	new := _ingress({"ingressClassName": "nginx", "rules": _rules(["legacy.example.org", "bank.example.com"])})
	r := _eval(object.union(_ingress_request("UPDATE", new), {"request": {"oldObject": old}}), _policy)
	{v.msg | some v in r.violations} == {"host \"bank.example.com\" of Ingress \"web\" is not allowed for tenant \"oil\"; allowed: oil.example.com, *.oil.example.com, or names matching ^[a-z]+\\.oil\\.test$"}
}

test_gateway_listeners_are_judged_with_their_names if {
	listeners := [
		{"name": "https", "protocol": "HTTPS", "port": 443, "hostname": "bank.example.com"},
		{"name": "all", "protocol": "HTTP", "port": 80},
		{"name": "tcp", "protocol": "TCP", "port": 5432},
	]
	r := _eval(_gateway_request("CREATE", listeners), _policy)
	{v.msg | some v in r.violations} == {
		"host \"bank.example.com\" of listener \"https\" of Gateway \"gw\" is not allowed for tenant \"oil\"; allowed: oil.example.com, *.oil.example.com, or names matching ^[a-z]+\\.oil\\.test$",
		"listener \"all\" of Gateway \"gw\" names no host, so it would serve every host name its controller serves; name hosts of tenant \"oil\": oil.example.com, *.oil.example.com, or names matching ^[a-z]+\\.oil\\.test$",
	}
}

test_another_gateway_class_is_denied if {
	inp := json.patch(_gateway_request("CREATE", []), [{"op": "replace", "path": "/request/object/spec/gatewayClassName", "value": "internet"}])
	r := _eval(inp, _policy)
	r.violations == {{"id": "gateway-class", "msg": "GatewayClass \"internet\" of Gateway \"gw\" is not allowed for tenant \"oil\"; allowed: shared"}}
}

_attached(request, parents) := object.union(request, {"request": {"object": {"spec": {"parentRefs": parents}}}})

test_a_route_without_hostnames_on_a_shared_gateway_is_refused if {
	every kind in [["HTTPRoute", "httproutes"], ["GRPCRoute", "grpcroutes"], ["TLSRoute", "tlsroutes"]] {
		shared := _attached(_route_request(kind[0], kind[1], []), [{"name": "edge"}, {"name": "shared", "namespace": "infra"}])
		[v] := [v | some v in _eval(shared, _policy).violations]
		v.id == "hostname"
		startswith(v.msg, sprintf("%s \"shop\" names no hostnames and attaches to Gateway \"shared\" in namespace \"infra\", so it would take every host its listeners serve; name hosts of tenant \"oil\": oil.example.com, *.oil.example.com", [kind[0]]))
		named := _attached(_route_request(kind[0], kind[1], ["shop.oil.example.com"]), [{"name": "shared", "namespace": "infra"}])
		count(_eval(named, _policy).violations) == 0
	}
}

test_a_route_without_hostnames_on_a_listener_set_of_another_namespace_is_refused if {
	every parent in [
		{"name": "edge", "namespace": "infra", "kind": "ListenerSet"},
		{"name": "edge", "namespace": "infra", "kind": "XListenerSet", "group": "gateway.networking.x-k8s.io"},
	] {
		[v] := [v | some v in _eval(_attached(_route_request("HTTPRoute", "httproutes", []), [parent]), _policy).violations]
		startswith(v.msg, sprintf("HTTPRoute \"shop\" names no hostnames and attaches to %s \"edge\" in namespace \"infra\"", [parent.kind]))
	}
	count(_eval(_attached(_route_request("HTTPRoute", "httproutes", []), [{"name": "edge", "namespace": "infra", "kind": "XListenerSet"}]), _policy).violations) == 0
}

test_a_route_without_hostnames_on_its_own_namespace_gateway_or_a_service_passes if {
	every parents in [
		[{"name": "edge"}],
		[{"name": "edge", "namespace": "oil-dev"}],
		[{"name": "web", "group": "", "kind": "Service", "namespace": "other"}],
	] {
		count(_eval(_attached(_route_request("HTTPRoute", "httproutes", []), parents), _policy).violations) == 0
	}
}

test_a_route_without_hostnames_kept_on_update_passes if {
	old := _attached(_route_request("HTTPRoute", "httproutes", []), [{"name": "shared", "namespace": "infra"}])
	updated := json.patch(old, [
		{"op": "replace", "path": "/request/operation", "value": "UPDATE"},
		{"op": "add", "path": "/request/oldObject", "value": old.request.object},
	])
	count(_eval(updated, _policy).violations) == 0
}

test_route_hostnames_are_judged_and_routes_without_hostnames_pass if {
	every kind in [["HTTPRoute", "httproutes"], ["GRPCRoute", "grpcroutes"], ["TLSRoute", "tlsroutes"]] {
		r := _eval(_route_request(kind[0], kind[1], ["shop.oil.example.com", "bank.example.com"]), _policy)
		{v.id | some v in r.violations} == {"hostname"}
		count(r.violations) == 1
		count(_eval(_route_request(kind[0], kind[1], []), _policy).violations) == 0
	}
}

test_unrestricted_tenants_are_left_alone if {
	inp := f.in_namespace(_ingress_request("CREATE", _ingress({"ingressClassName": "haproxy", "rules": _rules(["bank.example.com"])})), "gas-a", "gas")
	r := _eval(inp, _policy)
	count(r.violations) == 0
	count(r.mutations) == 0
}

test_namespaces_of_no_tenant_are_left_alone if {
	r := _eval(f.outside(_ingress_request("CREATE", _ingress({"rules": _rules(["bank.example.com"])}))), _policy)
	count(r.violations) == 0
}

test_an_update_adding_a_spec_class_beside_the_annotation_is_judged if {
	old := object.union(_ingress({"rules": _rules(["oil.example.com"])}), {"metadata": {"annotations": {"kubernetes.io/ingress.class": "nginx"}}})
	new := json.patch(old, [{"op": "add", "path": "/spec/ingressClassName", "value": "platform-internal"}])
	r := _eval(object.union(_ingress_request("UPDATE", new), {"request": {"oldObject": old}}), _policy)
	r.violations == {{"id": "ingress-class", "msg": "IngressClass \"platform-internal\" of Ingress \"web\" is not allowed for tenant \"oil\"; allowed: nginx, or names matching ^internal-"}}
}

test_an_update_dropping_the_class_gets_the_default if {
	old := _ingress({"ingressClassName": "nginx", "rules": _rules(["oil.example.com"])})
	new := _ingress({"rules": _rules(["oil.example.com"])})
	r := _eval(object.union(_ingress_request("UPDATE", new), {"request": {"oldObject": old}}), _policy)
	r.mutations == {{"op": "add", "path": "/spec/ingressClassName", "value": "nginx"}}
	without := _eval(object.union(_ingress_request("UPDATE", new), {"request": {"oldObject": old}}), json.patch(_policy, [{"op": "replace", "path": "/classes/default", "value": ""}]))
	{v.id | some v in without.violations} == {"ingress-class"}
}

test_listener_set_listeners_are_judged_like_a_gateways if {
	every kind in [
		["gateway.networking.k8s.io", "ListenerSet", "listenersets"],
		["gateway.networking.x-k8s.io", "XListenerSet", "xlistenersets"],
	] {
		inp := f.request_for(kind[0], kind[1], kind[2], "CREATE", {
			"kind": kind[1], "metadata": {"name": "shop"},
			"spec": {"parentRef": {"name": "shared"}, "listeners": [{"name": "https", "protocol": "HTTPS", "port": 443, "hostname": "shop.gas.example.com"}]},
		})
		r := _eval(inp, _policy)
		r.violations == {{"id": "hostname", "msg": sprintf("host \"shop.gas.example.com\" of listener \"https\" of %s \"shop\" is not allowed for tenant \"oil\"; allowed: oil.example.com, *.oil.example.com, or names matching ^[a-z]+\\.oil\\.test$", [kind[1]])}}
	}
}
