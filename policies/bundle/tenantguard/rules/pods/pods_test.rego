package tenantguard.rules.pods_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.rules.pods

_violations(inp) := result if {
	result := pods.violations with input as inp
		with data.tenantguard.registry as f.registry
}

_ids(inp) := {v.id | some v in _violations(inp)}

_msgs(inp) := {v.msg | some v in _violations(inp)}

_gas(spec) := f.in_namespace(f.request("CREATE", f.pod(spec)), "gas-web", "gas")

test_plain_pod_is_allowed if {
	count(_ids(f.request("CREATE", f.pod({"containers": [f.container({})]})))) == 0
}

test_host_network_is_denied if {
	_ids(f.request("CREATE", f.pod({"hostNetwork": true, "containers": [f.container({})]}))) == {"host-network"}
}

test_host_pid_and_ipc_are_denied_with_both_reasons if {
	msgs := _msgs(f.request("CREATE", f.pod({"hostPID": true, "hostIPC": true, "containers": [f.container({})]})))
	msgs == {
		"hostPID of Pod \"web\" is not allowed for tenant \"oil\"; remove it so the pod keeps its own namespaces",
		"hostIPC of Pod \"web\" is not allowed for tenant \"oil\"; remove it so the pod keeps its own namespaces",
	}
}

test_host_port_in_an_init_container_is_denied if {
	inp := f.request("CREATE", f.pod({
		"initContainers": [f.container({"name": "setup", "ports": [{"containerPort": 80, "hostPort": 8080}]})],
		"containers": [f.container({"ports": [{"containerPort": 80}]})],
	}))
	_msgs(inp) == {"init container \"setup\" of Pod \"web\" asks for hostPort 8080, which is not allowed for tenant \"oil\"; expose the port through a Service instead"}
}

test_privileged_ephemeral_container_is_denied if {
	inp := f.request("CREATE", f.pod({
		"containers": [f.container({})],
		"ephemeralContainers": [f.container({"name": "debug", "securityContext": {"privileged": true}})],
	}))
	_ids(inp) == {"privileged"}
}

test_windows_host_process_is_denied if {
	inp := f.request("CREATE", f.pod({"securityContext": {"windowsOptions": {"hostProcess": true}}, "containers": [f.container({})]}))
	_ids(inp) == {"privileged"}
	inp2 := f.request("CREATE", f.pod({"containers": [f.container({"securityContext": {"windowsOptions": {"hostProcess": true}}})]}))
	_ids(inp2) == {"privileged"}
}

test_host_path_is_denied_without_grants if {
	inp := f.request("CREATE", f.pod({"volumes": [{"name": "root", "hostPath": {"path": "/"}}], "containers": [f.container({})]}))
	_msgs(inp) == {"hostPath volume \"root\" (path \"/\") of Pod \"web\" is not allowed for tenant \"oil\"; allowed: no hostPath volumes; use emptyDir or a PersistentVolumeClaim"}
}

test_granted_host_path_mounted_read_only_is_allowed if {
	inp := _gas({
		"volumes": [{"name": "logs", "hostPath": {"path": "/var/log/app"}}],
		"containers": [f.container({"volumeMounts": [{"name": "logs", "mountPath": "/logs", "readOnly": true}]})],
	})
	count(_ids(inp)) == 0
}

test_granted_host_path_mounted_writable_is_denied if {
	inp := _gas({
		"volumes": [{"name": "logs", "hostPath": {"path": "/var/log"}}],
		"containers": [f.container({"volumeMounts": [{"name": "logs", "mountPath": "/logs"}]})],
	})
	_msgs(inp) == {"hostPath volume \"logs\" (path \"/var/log\") of Pod \"web\" may only be mounted read-only for tenant \"gas\", but container \"app\" mounts it writable; set readOnly: true on the mount"}
}

test_writable_grant_allows_writable_mount if {
	inp := _gas({
		"volumes": [{"name": "data", "hostPath": {"path": "/data/x"}}],
		"containers": [f.container({"volumeMounts": [{"name": "data", "mountPath": "/d"}]})],
	})
	count(_ids(inp)) == 0
}

test_host_path_tricks_are_denied if {
	every path in ["/var/logs", "/var/log/../../etc", "var/log", "/var/lo", "/etc/var/log"] {
		inp := _gas({"volumes": [{"name": "x", "hostPath": {"path": path}}], "containers": [f.container({})]})
		_ids(inp) == {"host-path"}
	}
}

test_host_path_message_lists_grants if {
	inp := _gas({"volumes": [{"name": "x", "hostPath": {"path": "/etc"}}], "containers": [f.container({})]})
	_msgs(inp) == {"hostPath volume \"x\" (path \"/etc\") of Pod \"web\" is not allowed for tenant \"gas\"; allowed: /var/log (read-only), /data"}
}

test_every_workload_kind_is_checked if {
	spec := {"hostNetwork": true, "containers": [f.container({})]}
	template := {"template": {"spec": spec}}
	every group, kind in {"apps": "Deployment", "batch": "Job", "": "ReplicationController"} {
		inp := f.request_for(group, kind, "x", "CREATE", {"kind": kind, "metadata": {"name": "w"}, "spec": template})
		_ids(inp) == {"host-network"}
	}
	cron := {"kind": "CronJob", "metadata": {"name": "c"}, "spec": {"jobTemplate": {"spec": template}}}
	_ids(f.request_for("batch", "CronJob", "cronjobs", "CREATE", cron)) == {"host-network"}
	pt := {"kind": "PodTemplate", "metadata": {"name": "t"}, "template": {"spec": spec}}
	_ids(f.request_for("", "PodTemplate", "podtemplates", "CREATE", pt)) == {"host-network"}
}

test_denials_name_the_workload_and_its_containers if {
	container := f.container({"ports": [{"containerPort": 80, "hostPort": 80}], "securityContext": {"privileged": true}})
	spec := {"hostNetwork": true, "hostPID": true, "containers": [container]}
	obj := {"kind": "Deployment", "metadata": {"name": "web"}, "spec": {"template": {"spec": spec}}}
	_msgs(f.request_for("apps", "Deployment", "deployments", "CREATE", obj)) == {
		"hostNetwork of Deployment \"web\" is not allowed for tenant \"oil\"; use the pod network and expose ports through a Service",
		"hostPID of Deployment \"web\" is not allowed for tenant \"oil\"; remove it so the pod keeps its own namespaces",
		"container \"app\" of Deployment \"web\" asks for hostPort 80, which is not allowed for tenant \"oil\"; expose the port through a Service instead",
		"container \"app\" of Deployment \"web\" is privileged, which is not allowed for tenant \"oil\"; remove securityContext.privileged",
	}
}

test_a_windows_host_process_denial_names_the_workload if {
	obj := {"kind": "Job", "metadata": {"name": "build"}, "spec": {"template": {"spec": {"securityContext": {"windowsOptions": {"hostProcess": true}}}}}}
	_msgs(f.request_for("batch", "Job", "jobs", "CREATE", obj)) == {"Windows hostProcess of Job \"build\" is not allowed for tenant \"oil\"; remove securityContext.windowsOptions.hostProcess"}
}

test_custom_kind_named_deployment_is_ignored if {
	obj := {"kind": "Deployment", "metadata": {"name": "w"}, "spec": {"template": {"spec": {"hostNetwork": true}}}}
	count(_ids(f.request_for("example.com", "Deployment", "deployments", "CREATE", obj))) == 0
}

test_update_introducing_host_network_is_denied if {
	old := f.pod({"containers": [f.container({})]})
	new := f.pod({"hostNetwork": true, "containers": [f.container({})]})
	_ids(f.update(old, new)) == {"host-network"}
}

test_update_leaving_the_spec_alone_is_not_rejudged if {
	spec := {"hostNetwork": true, "containers": [f.container({})]}
	new := object.union(f.pod(spec), {"metadata": {"finalizers": []}})
	count(_ids(f.update(f.pod(spec), new))) == 0
}

test_ephemeral_containers_subresource_is_checked if {
	old := f.pod({"containers": [f.container({})]})
	new := f.pod({"containers": [f.container({})], "ephemeralContainers": [f.container({"name": "dbg", "securityContext": {"privileged": true}})]})
	inp := object.union(f.update(old, new), {"request": {"subResource": "ephemeralcontainers"}})
	_ids(inp) == {"privileged"}
}

test_pods_outside_tenant_namespaces_are_left_alone if {
	inp := f.outside(f.request("CREATE", f.pod({"hostNetwork": true})))
	count(_ids(inp)) == 0
}

test_unknown_tenant_gets_restrictive_defaults if {
	inp := f.in_namespace(f.request("CREATE", f.pod({"hostNetwork": true})), "ghost-a", "ghost")
	_ids(inp) == {"host-network"}
}

test_allowed_tenant_may_use_host_network if {
	registry := object.union(f.registry, {"tenants": {"oil": {"pods": {"allowHostNetwork": true}}}})
	ids := {v.id | some v in pods.violations} with input as f.request("CREATE", f.pod({"hostNetwork": true}))
		with data.tenantguard.registry as registry
	count(ids) == 0
}
