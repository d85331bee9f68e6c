package tenantguard.rules.runtime_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.rules.runtime

_policy := {"allowed": ["gvisor"], "allowedRegex": "^kata-", "default": "gvisor"}

_eval(inp) := {"violations": v, "mutations": m} if {
	reg := object.union(f.registry, {"tenants": {"oil": {"runtimeClasses": _policy}}})
	v := runtime.violations with input as inp with data.tenantguard.registry as reg
	m := runtime.mutations with input as inp with data.tenantguard.registry as reg
}

test_allowed_classes_pass if {
	every name in ["gvisor", "kata-qemu"] {
		r := _eval(f.request("CREATE", f.pod({"runtimeClassName": name, "containers": [f.container({})]})))
		count(r.violations) == 0
		count(r.mutations) == 0
	}
}

test_another_class_is_denied_naming_the_workload if {
	obj := {"kind": "CronJob", "metadata": {"name": "nightly"}, "spec": {"jobTemplate": {"spec": {"template": {"spec": {"runtimeClassName": "runc"}}}}}}
	r := _eval(f.request_for("batch", "CronJob", "cronjobs", "CREATE", obj))
	r.violations == {{"id": "runtime-class", "msg": "RuntimeClass \"runc\" of CronJob \"nightly\" is not allowed for tenant \"oil\"; allowed: gvisor, or names matching ^kata-"}}
}

test_a_pod_without_class_gets_the_default if {
	r := _eval(f.request("CREATE", f.pod({"containers": [f.container({})]})))
	r.mutations == {{"op": "add", "path": "/spec/runtimeClassName", "value": "gvisor"}}
	count(r.violations) == 0
}

test_a_template_without_class_gets_the_default if {
	obj := {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"runtimeClassName": ""}}}}
	r := _eval(f.request_for("apps", "Deployment", "deployments", "CREATE", obj))
	r.mutations == {{"op": "add", "path": "/spec/template/spec/runtimeClassName", "value": "gvisor"}}
}

test_an_update_keeping_an_old_class_is_not_judged if {
	old := f.pod({"runtimeClassName": "runc", "containers": [f.container({})]})
	r := _eval(f.update(old, json.patch(old, [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}])))
	count(r.violations) == 0
	count(r.mutations) == 0
}

test_unrestricted_tenants_are_left_alone if {
	r := _eval(f.in_namespace(f.request("CREATE", f.pod({"runtimeClassName": "runc"})), "gas-a", "gas"))
	count(r.violations) == 0
	count(r.mutations) == 0
}

test_a_pod_without_class_and_no_default_is_denied if {
	reg := object.union(f.registry, {"tenants": {"oil": {"runtimeClasses": {"allowed": ["gvisor"], "allowedRegex": "", "default": ""}}}})
	v := runtime.violations with input as f.request("CREATE", f.pod({"containers": [f.container({})]})) with data.tenantguard.registry as reg
	v == {{"id": "runtime-class", "msg": "Pod \"web\" names no RuntimeClass, so it would run on the nodes' default runtime, and tenant \"oil\" has no default one; name one of: gvisor"}}
}

test_an_update_dropping_the_class_is_denied_and_one_keeping_none_passes if {
	reg := object.union(f.registry, {"tenants": {"oil": {"runtimeClasses": {"allowed": ["gvisor"], "allowedRegex": "", "default": ""}}}})
	sandboxed := f.pod({"runtimeClassName": "gvisor", "containers": [f.container({})]})
	dropped := json.patch(sandboxed, [{"op": "remove", "path": "/spec/runtimeClassName"}])
	{v.id | some v in runtime.violations with input as f.update(sandboxed, dropped) with data.tenantguard.registry as reg} == {"runtime-class"}
	plain := f.pod({"containers": [f.container({})]})
	relabelled := json.patch(plain, [{"op": "add", "path": "/spec/containers/0/image", "value": "registry.example/app:2"}])
	count(runtime.violations) == 0 with input as f.update(plain, relabelled) with data.tenantguard.registry as reg
}
