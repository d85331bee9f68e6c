package tests

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// clusterScoped are the kinds the chart renders that have no namespace.
var clusterScoped = []string{"ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}

// renderRelease renders the chart as release in namespace with args and
// returns its documents by KIND/NAME.
func renderRelease(t *testing.T, release, namespace string, args ...string) map[string]string {
	t.Helper()
	out, err := helm(t, append([]string{"template", release, chartDir, "-n", namespace}, args...)...)
	if err != nil {
		t.Fatalf("helm template %s: %v", release, err)
	}
	return byKindName(t, out)
}

// TestChartTwoReleasesShareACluster renders two releases, with each ci/
// values file and in one namespace or two: no cluster-scoped object has
// the same name in both (in one namespace, no object at all), and each
// server gets its own --instance, which the names of its owners'
// ClusterRoles and of the one ClusterRoleBinding it may write follow.
func TestChartTwoReleasesShareACluster(t *testing.T) {
	ciFiles, err := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	if err != nil || len(ciFiles) == 0 {
		t.Fatalf("no ci/ values: %v", err)
	}
	for _, values := range ciFiles {
		for _, namespaces := range [][2]string{{"tenants-a", "tenants-b"}, {"platform", "platform"}} {
			name := filepath.Base(values) + " in " + namespaces[0]
			if namespaces[0] != namespaces[1] {
				name += " and " + namespaces[1]
			}
			t.Run(name, func(t *testing.T) {
				blue := renderRelease(t, "blue", namespaces[0], "-f", values)
				green := renderRelease(t, "green", namespaces[1], "-f", values)
				for id := range blue {
					if green[id] == "" {
						continue
					}
					kind, _, _ := strings.Cut(id, "/")
					if namespaces[0] == namespaces[1] || slices.Contains(clusterScoped, kind) {
						t.Errorf("both releases render %s", id)
					}
				}
				for release, docs := range map[string]map[string]string{"blue": blue, "green": green} {
					checkInstance(t, docs, release+"-tenantguard")
				}
			})
		}
	}
}

func TestChartInstanceValue(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		instance string
	}{
		{"The instance is the fullname by default", nil, "tg-tenantguard"},
		{"A release named tenantguard is the default instance, with the names of earlier versions", []string{"--set", "fullnameOverride=tenantguard"}, "tenantguard"},
		{"instance=tenantguard keeps the names of a release installed before instances", []string{"--set", "instance=tenantguard"}, "tenantguard"},
		{"instance names the server's objects apart from the release", []string{"--set", "instance=blue"}, "blue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkInstance(t, render(t, tc.args...), tc.instance)
		})
	}
	refusal{"an instance that is not a DNS label", []string{"--set", "instance=Blue_1"}, "instance"}.check(t)
}

// checkInstance holds a release's documents to the server's --instance:
// the flag, the owners' ClusterRoles named and labelled from it, and the
// server's RBAC writing the one ClusterRoleBinding and binding the two
// ClusterRoles of that instance.
func checkInstance(t *testing.T, docs map[string]string, instance string) {
	t.Helper()
	var deployments []appsv1.Deployment
	var roles []rbacv1.ClusterRole
	for id, doc := range docs {
		switch kind, _, _ := strings.Cut(id, "/"); kind {
		case "Deployment":
			var d appsv1.Deployment
			decode(t, doc, &d)
			deployments = append(deployments, d)
		case "ClusterRole":
			var r rbacv1.ClusterRole
			decode(t, doc, &r)
			roles = append(roles, r)
		}
	}
	if len(deployments) != 1 {
		t.Fatalf("%d Deployments", len(deployments))
	}
	if args := deployments[0].Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--instance="+instance) {
		t.Errorf("the server's args %v have no --instance=%s", args, instance)
	}
	creator, deleter := instance+"-namespace-creator", instance+"-namespace-deleter"
	for _, name := range []string{creator, deleter} {
		var r rbacv1.ClusterRole
		decode(t, docs["ClusterRole/"+name], &r)
		label, labelled := r.Labels["tenantguard.io/instance"]
		if (instance == "tenantguard") == labelled || (labelled && label != instance) {
			t.Errorf("ClusterRole %s has instance label %q (labelled: %v)", name, label, labelled)
		}
	}
	var bound, written []string
	for _, r := range roles {
		for _, rule := range r.Rules {
			switch {
			case slices.Contains(rule.Resources, "clusterroles") && slices.Contains(rule.Verbs, "bind"):
				bound = append(bound, rule.ResourceNames...)
			case slices.Contains(rule.Resources, "clusterrolebindings") && slices.Contains(rule.Verbs, "create"):
				written = append(written, rule.ResourceNames...)
			}
		}
	}
	if !slices.Contains(bound, creator) || !slices.Contains(bound, deleter) {
		t.Errorf("the server may bind %v, not its %s and %s", bound, creator, deleter)
	}
	if !slices.Equal(written, []string{instance + "-owners"}) {
		t.Errorf("the server may write the ClusterRoleBindings %v, want %s-owners only", written, instance)
	}
}
