package tenantguard.rules.images_test

import data.tenantguard.fixtures_test as f
import data.tenantguard.rules.images

_policy := {
	"allowedRegistries": ["registry.example.com", "ghcr.io/oil", "docker.io/library"],
	"allowedRegex": "",
	"allowedPullPolicies": ["Always"],
}

_violations(inp, policy) := v if {
	v := images.violations with input as inp
		with data.tenantguard.registry as object.union(f.registry, {"tenants": {"oil": {"images": policy}}})
}

_ids(inp, policy) := {v.id | some v in _violations(inp, policy)}

_msgs(inp, policy) := {v.msg | some v in _violations(inp, policy)}

# The request is admitted under _policy. (A comparison of comparisons
# loses its parentheses to opa fmt, hence a function.)
_clean(inp) := count(_ids(inp, _policy)) == 0

_pod(image, pull) := f.pod({"containers": [f.container({"image": image, "imagePullPolicy": pull})]})

test_references_are_normalized_before_matching if {
	every image, allowed in {
		"nginx": true,
		"nginx:1.27": true,
		"library/nginx@sha256:0123": true,
		"docker.io/nginx:1.27": true,
		"index.docker.io/library/nginx": true,
		"bitnami/redis": false,
		"registry.example.com/team/app:v1": true,
		"registry.example.com:5000/app": false,
		"registry.example.com.evil.io/x": false,
		"ghcr.io/oil/api@sha256:abcd": true,
		"ghcr.io/oil": true,
		"ghcr.io/oilfield/api": false,
		"ghcr.io/OIL/api": false,
		"localhost/app": false,
	} {
		allowed == _clean(f.request("CREATE", _pod(image, "Always")))
	}
}

test_a_refused_image_is_named_with_its_container_and_workload if {
	obj := {"kind": "Deployment", "metadata": {"name": "web"}, "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "quay.io/x/y:2", "imagePullPolicy": "Always"}]}}}}
	_msgs(f.request_for("apps", "Deployment", "deployments", "CREATE", obj), _policy) == {"image \"quay.io/x/y:2\" of container \"app\" in Deployment \"web\" is not from a registry allowed for tenant \"oil\"; allowed: registry.example.com, ghcr.io/oil, docker.io/library"}
}

test_the_regex_sees_the_normalized_reference if {
	policy := {"allowedRegistries": [], "allowedRegex": "^docker\\.io/library/nginx:1\\.", "allowedPullPolicies": []}
	count(_ids(f.request("CREATE", _pod("nginx:1.27", "")), policy)) == 0
	_ids(f.request("CREATE", _pod("nginx:2.0", "")), policy) == {"image-registry"}
	_msgs(f.request("CREATE", _pod("nginx:2.0", "")), policy) == {"image \"docker.io/library/nginx:2.0\" of container \"app\" in Pod \"web\" is not from a registry allowed for tenant \"oil\"; allowed: names matching ^docker\\.io/library/nginx:1\\."}
}

test_every_sort_of_container_is_judged if {
	spec := {
		"initContainers": [{"name": "init", "image": "quay.io/i", "imagePullPolicy": "Always"}],
		"containers": [f.container({"imagePullPolicy": "Always"})],
		"ephemeralContainers": [{"name": "debug", "image": "quay.io/d", "imagePullPolicy": "Always"}],
	}
	msgs := _msgs(f.request("CREATE", f.pod(spec)), _policy)
	count(msgs) == 2
	some m in msgs
	contains(m, "init container \"init\"")
	some n in msgs
	contains(n, "ephemeral container \"debug\"")
}

test_the_effective_pull_policy_is_judged if {
	every c in [
		["nginx", "", true],
		["nginx:latest", "", true],
		["nginx:latest@sha256:0123", "", true],
		["nginx:1.27", "", false],
		["nginx@sha256:0123", "", false],
		["nginx:1.27", "Always", true],
		["nginx", "Never", false],
	] {
		c[2] == _clean(f.request("CREATE", _pod(c[0], c[1])))
	}
	_msgs(f.request("CREATE", _pod("nginx:1.27", "")), _policy) == {"container \"app\" in Pod \"web\" pulls image \"nginx:1.27\" with imagePullPolicy IfNotPresent, which is not allowed for tenant \"oil\"; allowed: Always"}
}

test_an_update_judges_only_the_containers_it_changes if {
	old := f.pod({"containers": [f.container({"image": "quay.io/legacy", "imagePullPolicy": "Always"})]})
	debugged := json.patch(old, [{"op": "add", "path": "/spec/ephemeralContainers", "value": [{"name": "debug", "image": "busybox", "imagePullPolicy": "Always"}]}])
	count(_ids(object.union(f.update(old, debugged), {"request": {"subResource": "ephemeralcontainers"}}), _policy)) == 0
	swapped := json.patch(old, [{"op": "replace", "path": "/spec/containers/0/image", "value": "quay.io/other"}])
	_ids(f.update(old, swapped), _policy) == {"image-registry"}
	bad_debug := json.patch(old, [{"op": "add", "path": "/spec/ephemeralContainers", "value": [{"name": "debug", "image": "quay.io/tools", "imagePullPolicy": "Always"}]}])
	_ids(f.update(old, bad_debug), _policy) == {"image-registry"}
}

test_an_empty_policy_restricts_nothing if {
	count(_ids(f.request("CREATE", _pod("quay.io/anything", "Never")), {"allowedRegistries": [], "allowedRegex": "", "allowedPullPolicies": []})) == 0
}

test_unrestricted_tenants_and_other_namespaces_are_left_alone if {
	count(_ids(f.in_namespace(f.request("CREATE", _pod("quay.io/x", "Never")), "gas-a", "gas"), _policy)) == 0
	count(_ids(f.outside(f.request("CREATE", _pod("quay.io/x", "Never"))), _policy)) == 0
}

test_an_image_volume_is_judged_as_a_container_image if {
	spec := {
		"containers": [f.container({"imagePullPolicy": "Always"})],
		"volumes": [
			{"name": "payload", "image": {"reference": "evil.io/payload:1", "pullPolicy": "IfNotPresent"}},
			{"name": "tools", "image": {"reference": "ghcr.io/oil/tools:2", "pullPolicy": "Always"}},
			{"name": "tmp", "emptyDir": {}},
		],
	}
	_msgs(f.request("CREATE", f.pod(spec)), _policy) == {
		"image \"evil.io/payload:1\" of image volume \"payload\" in Pod \"web\" is not from a registry allowed for tenant \"oil\"; allowed: registry.example.com, ghcr.io/oil, docker.io/library",
		"image volume \"payload\" in Pod \"web\" pulls image \"evil.io/payload:1\" with imagePullPolicy IfNotPresent, which is not allowed for tenant \"oil\"; allowed: Always",
	}
	unpinned := json.patch(spec, [{"op": "replace", "path": "/volumes/1/image", "value": {"reference": "ghcr.io/oil/tools:2"}}])
	_ids(f.request("CREATE", f.pod(unpinned)), _policy) == {"image-registry", "image-pull-policy"}
}

test_an_update_keeping_an_image_volume_does_not_judge_it if {
	old := f.pod({"containers": [f.container({"imagePullPolicy": "Always"})], "volumes": [{"name": "legacy", "image": {"reference": "quay.io/legacy:1", "pullPolicy": "Always"}}]})
	relabelled := json.patch(old, [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}])
	count(_ids(f.update(old, relabelled), _policy)) == 0
	swapped := json.patch(old, [{"op": "replace", "path": "/spec/volumes/0/image/reference", "value": "quay.io/other:1"}])
	_ids(f.update(old, swapped), _policy) == {"image-registry"}
}
