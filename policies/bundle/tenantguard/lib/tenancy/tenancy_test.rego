package tenantguard.lib.tenancy_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.lib.tenancy

test_prefix_tenant_prefers_the_longest_tenant_name if {
	tenancy.prefix_tenant("oil-x-dev") == "oil-x" with data.tenantguard.registry as f.registry
	tenancy.prefix_tenant("oil-dev") == "oil" with data.tenantguard.registry as f.registry
}

test_prefix_tenant_needs_a_hyphen if {
	not tenancy.prefix_tenant("oil") with data.tenantguard.registry as f.registry
	not tenancy.prefix_tenant("oilfield-a") with data.tenantguard.registry as f.registry
}

test_allowed_text_lists_names_and_regex if {
	tenancy.allowed_text({"allowed": ["a", "b"], "allowedRegex": "^x-"}) == "a, b, or names matching ^x-"
	tenancy.allowed_text({"allowed": [], "allowedRegex": "^x-"}) == "names matching ^x-"
	tenancy.allowed_text({"allowed": [], "allowedRegex": ""}) == "none"
}

test_name_allowed_by_list_or_regex if {
	tenancy.name_allowed({"allowed": ["a"], "allowedRegex": ""}, "a")
	tenancy.name_allowed({"allowed": [], "allowedRegex": "^x-"}, "x-1")
	not tenancy.name_allowed({"allowed": [], "allowedRegex": ""}, "x-1")
}

test_count_of_defaults_to_zero if {
	tenancy.count_of("oil", "pods") == 0 with input as {"cluster": {}}
	tenancy.count_of("oil", "pods") == 7 with input as {"cluster": {"counts": {"oil": {"pods": 7}}}}
}

test_namespace_tenant_needs_a_namespaced_request if {
	not tenancy.in_tenant_namespace with input as {"request": {"namespace": ""}, "cluster": {"namespace": f.tenant_namespace("x", "oil")}}
		with data.tenantguard.registry as f.registry
	not tenancy.in_tenant_namespace with input as {"request": {"namespace": "x"}, "cluster": {"namespace": {"name": "x", "labels": {"tenantguard.io/tenant": ""}}}}
		with data.tenantguard.registry as f.registry
}

test_object_name_falls_back_to_the_object if {
	tenancy.object_name == "a" with input as {"request": {"name": "", "object": {"metadata": {"name": "a"}}}}
	tenancy.object_name == "b" with input as {"request": {"oldObject": {"metadata": {"name": "b"}}, "object": null}}
}
