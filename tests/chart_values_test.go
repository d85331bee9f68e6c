package tests

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/tenantguard/tenantguard/internal/policydir"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/fixtures"
)

// refusal is values `helm template` must refuse, and what its error says.
type refusal struct {
	name string
	args []string
	want string
}

// check renders with the refusal's values and fails unless helm refuses
// them, saying want.
func (r refusal) check(t *testing.T) {
	t.Helper()
	_, err := helm(t, append([]string{"template", "tg", chartDir}, r.args...)...)
	if err == nil || !strings.Contains(err.Error(), r.want) {
		t.Fatalf("error %v, want %q", err, r.want)
	}
}

// TestChartRefusesWhatTheServerWould holds the schema and the chart's checks
// to the server's own flag validation (internal/cli/serve.go,
// webhook/certrotate) and refuses unsafe combinations with one line.
func TestChartRefusesWhatTheServerWould(t *testing.T) {
	tests := []refusal{
		{"a reservation TTL under 30 seconds", []string{"--set", "quota.reservationTTL=5s"}, "quota.reservationTTL=5s: must be at least 30s"},
		{"a certificate lifetime of zero", []string{"--set", "tls.builtin.certValidity=0s"}, "at '/tls/builtin/certValidity'"},
		{"a CA lifetime under three certificate lifetimes", []string{"--set", "tls.builtin.caValidity=3000h"}, "tls.builtin.caValidity=3000h must be at least three times certValidity=2160h"},
		{"a check interval over a sixth of the certificate lifetime", []string{"--set", "tls.builtin.checkInterval=400h"}, "tls.builtin.checkInterval=400h must be at most a sixth of certValidity"},
		{"a tenant label that is not a label key", []string{"--set", "tenantLabel=bad label!"}, "at '/tenantLabel': 'bad label!' does not match pattern"},
		{"a digest that is not sha256", []string{"--set", "image.digest=latest"}, "at '/image/digest'"},
		{"a probe setting other than its timing", []string{"--set", "livenessProbe.exec=x"}, "additional properties 'exec' not allowed"},
		{"a match condition without an expression", []string{"--set", "webhook.matchConditions[0].name=x"}, "missing property 'expression'"},
		{"an exempt namespace that is not a name", []string{"--set", "webhook.exemptNamespaces={Bad_NS}"}, "at '/webhook/exemptNamespaces/0'"},
		{"an extra argument that is not a flag", []string{"--set", "extraArgs={serve}"}, "at '/extraArgs/0'"},
		{"a port out of range", []string{"--set", "webhook.port=70000"}, "at '/webhook/port': maximum"},
		{"secret mode without a CA bundle", []string{"--set", "tls.mode=secret"}, "tls.mode=secret needs tls.caBundle"},
		{"a disruption budget as large as the replicas", []string{"--set", "replicaCount=1"}, "podDisruptionBudget.minAvailable=1 with replicaCount=1 would block every node drain"},
		{"a disruption budget as large as the replicas, given with --set", []string{"--set", "podDisruptionBudget.minAvailable=2"}, "podDisruptionBudget.minAvailable=2 with replicaCount=2 would block every node drain"},
		{"a disruption budget of every replica", []string{"--set", "podDisruptionBudget.minAvailable=100%"}, "podDisruptionBudget.minAvailable=100% of replicaCount=2 keeps 2 pods, all of them (rounded up), which would block every node drain"},
		{"a percentage that rounds up to every replica", []string{"--set", "podDisruptionBudget.minAvailable=60%"}, "podDisruptionBudget.minAvailable=60% of replicaCount=2 keeps 2 pods"},
		{"a percentage of one replica", []string{"--set", "podDisruptionBudget.minAvailable=50%", "--set", "replicaCount=1"}, "podDisruptionBudget.minAvailable=50% of replicaCount=1 keeps 1 pods"},
		{"a registry ConfigMap holding no tenants.yaml", []string{"--set-string", "registry.document=kind: ConfigMap\ndata: {other: x}"}, "registry.document is a ConfigMap without data.tenants.yaml as a string"},
		{"a registry ConfigMap whose tenants.yaml is a mapping, not text", []string{"--set-string", "registry.document=kind: ConfigMap\ndata:\n  tenants.yaml: {kind: TenantRegistry}"}, "registry.document is a ConfigMap without data.tenants.yaml as a string"},
		{"a registry document the chart would not write", []string{"--set", "registry.create=false", "--set", "registry.document=x"}, "registry.document is set but registry.create=false"},
		{"an existing service account without its name", []string{"--set", "serviceAccount.create=false"}, "serviceAccount.create=false needs serviceAccount.name"},
		{"metrics on the webhook's port", []string{"--set", "metrics.port=9443"}, "metrics.port and webhook.port are both 9443"},
		{"a renewal margin as long as the certificate", []string{"--set", "tls.mode=cert-manager", "--set", "tls.certManager.renewBefore=2160h"}, "tls.certManager.renewBefore=2160h must be shorter than duration=2160h"},
		{"a registry of another type", []string{"--set", "registry=5"}, "at '/registry'"},
		{"a memory limit that is not a size", []string{"--set", "memoryLimit=lots"}, "at '/memoryLimit'"},
		{"the collector off without a memory limit", []string{"--set", "gcPercent=-1", "--set", "memoryLimit=0"}, "gcPercent=-1 turns the garbage collector off, which needs a memory limit, and memoryLimit=0 sets none"},
		{"the collector off with a memory limit of zero in a unit", []string{"--set", "gcPercent=-1", "--set", "memoryLimit=0Mi"}, "and memoryLimit=0Mi sets none"},
		{"the collector off with auto and no container limit", []string{"--set", "gcPercent=-1", "--set", "resources.limits=null"}, "memoryLimit=auto sets none (auto without resources.limits.memory)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t)
			_, err := helm(t, append([]string{"template", "tg", chartDir}, tt.args...)...)
			// the chart's own checks: "Error: execution error at (...): REASON"
			if lines := strings.Split(err.Error(), "\n"); strings.HasPrefix(lines[0], "Error: execution error") && (!strings.Contains(lines[0], tt.want) || len(lines) > 1 && lines[1] != "") {
				t.Errorf("the reason is not one line:\n%s", err)
			}
		})
	}
}

// TestChartInstallsWithNoValues: no registry given is an empty one (no
// tenants, the chart's tenant label), which the server accepts.
func TestChartInstallsWithNoValues(t *testing.T) {
	out, err := helm(t, "template", "tg", chartDir, "-n", "tenantguard-system")
	if err != nil {
		t.Fatal(err)
	}
	docs := byKindName(t, out)
	var cm corev1.ConfigMap
	decode(t, docs["ConfigMap/tg-tenantguard-registry"], &cm)
	snap, err := registry.Parse("tenants.yaml", []byte(cm.Data["tenants.yaml"]))
	if err != nil {
		t.Fatalf("the default registry does not load: %v", err)
	}
	if snap.Len() != 0 || snap.TenantLabel() != "tenantguard.io/tenant" {
		t.Errorf("default registry: %d tenants, label %q; want none and the chart's label", snap.Len(), snap.TenantLabel())
	}
	if _, err := helm(t, "lint", "--strict", chartDir); err != nil {
		t.Errorf("helm lint --strict with no values: %v", err)
	}
}

// TestChartIsASubchart renders the chart as the dependency of an umbrella
// chart, which hands it the global values.
func TestChartIsASubchart(t *testing.T) {
	dir := t.TempDir()
	umbrella := filepath.Join(dir, "platform")
	if err := os.CopyFS(filepath.Join(umbrella, "charts", "tenantguard"), os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: platform\nversion: 1.0.0\ndependencies:\n  - name: tenantguard\n    version: 0.1.0\n",
		"values.yaml": "global:\n  imageRegistry: registry.example\ntenantguard:\n  replicaCount: 3\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(umbrella, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := helm(t, "template", "platform", umbrella, "-n", "platform")
	if err != nil {
		t.Fatalf("helm template of an umbrella chart: %v", err)
	}
	var d appsv1.Deployment
	decode(t, byKindName(t, out)["Deployment/platform-tenantguard"], &d)
	if *d.Spec.Replicas != 3 {
		t.Errorf("replicas %d, want the umbrella's 3", *d.Spec.Replicas)
	}
}

// TestChartRegistryValues: the registry the chart writes, or leaves to
// someone else.
func TestChartRegistryValues(t *testing.T) {
	example := filepath.Join("..", "examples", "registry.yaml")
	tests := []struct {
		name   string
		args   []string
		create bool
		want   string // the --registry-configmap flag
	}{
		{"a document is written into the chart's ConfigMap", []string{"--set-file", "registry.document=" + example}, true, "tenantguard-system/tg-tenantguard-registry"},
		{"a bare string is still the document", []string{"--set-file", "registry=" + example}, true, "tenantguard-system/tg-tenantguard-registry"},
		{"create=false leaves the ConfigMap to GitOps", []string{"--set", "registry.create=false"}, false, "tenantguard-system/tg-tenantguard-registry"},
		{"a name points the server at another ConfigMap", []string{"--set", "registry.create=false", "--set", "registry.name=tenants"}, false, "tenantguard-system/tenants"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := helm(t, append([]string{"template", "tg", chartDir, "-n", "tenantguard-system"}, tt.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			docs := byKindName(t, out)
			var d appsv1.Deployment
			decode(t, docs["Deployment/tg-tenantguard"], &d)
			if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--registry-configmap="+tt.want) {
				t.Errorf("args %q lack --registry-configmap=%s", d.Spec.Template.Spec.Containers[0].Args, tt.want)
			}
			_, name, _ := strings.Cut(tt.want, "/")
			if got := docs["ConfigMap/"+name] != ""; got != tt.create {
				t.Errorf("ConfigMap %s rendered: %v, want %v", name, got, tt.create)
			}
		})
	}
	// The ConfigMap in the cluster, as `kubectl get configmap -o yaml`
	// gives it to the CLI (registry validate, audit --registry), is a
	// registry, whether the document given was the example's ConfigMap or
	// the TenantRegistry document it holds.
	want, err := registry.Load(example)
	if err != nil {
		t.Fatal(err)
	}
	var given corev1.ConfigMap
	text, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	decode(t, string(text), &given)
	bare := filepath.Join(t.TempDir(), "tenants.yaml")
	if err := os.WriteFile(bare, []byte(given.Data[registry.DataKey]), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{example, bare} {
		docs := render(t, "--set-file", "registry.document="+file)
		snap, err := registry.Parse("configmap.yaml", []byte(docs["ConfigMap/tg-tenantguard-registry"]))
		if err != nil {
			t.Errorf("%s: the rendered ConfigMap is not a registry: %v", filepath.Base(file), err)
			continue
		}
		if snap.Len() != want.Len() || snap.Len() == 0 {
			t.Errorf("%s: the rendered ConfigMap holds %d tenants, want the example's %d", filepath.Base(file), snap.Len(), want.Len())
		}
	}
}

// deployment renders the chart with args and returns its Deployment.
func deployment(t *testing.T, args ...string) appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	decode(t, render(t, args...)["Deployment/tg-tenantguard"], &d)
	return d
}

// TestChartPodValues: every value of the pod and its container, rendered.
func TestChartPodValues(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		name string
		args []string
		ok   func(d appsv1.Deployment) bool
	}{
		{"a digest pins the image", []string{"--set", "image.digest=" + digest}, func(d appsv1.Deployment) bool {
			return d.Spec.Template.Spec.Containers[0].Image == "ghcr.io/tenantguard/tenantguard@"+digest
		}},
		{"the tag defaults to the appVersion", nil, func(d appsv1.Deployment) bool {
			return d.Spec.Template.Spec.Containers[0].Image == "ghcr.io/tenantguard/tenantguard:0.1.0"
		}},
		{"pull secrets reach the pod", []string{"--set", "imagePullSecrets[0].name=regcred"}, func(d appsv1.Deployment) bool {
			return len(d.Spec.Template.Spec.ImagePullSecrets) == 1 && d.Spec.Template.Spec.ImagePullSecrets[0].Name == "regcred"
		}},
		{"pod annotations and labels are added, selector labels kept", []string{"--set", "podAnnotations.a=b", "--set", "podLabels.team=platform"}, func(d appsv1.Deployment) bool {
			m := d.Spec.Template.ObjectMeta
			return m.Annotations["a"] == "b" && m.Labels["team"] == "platform" && m.Labels["app.kubernetes.io/name"] == "tenantguard"
		}},
		{"OpenShift drops the fixed user and group", []string{"--set", "podSecurityContext.runAsUser=null", "--set", "podSecurityContext.runAsGroup=null"}, func(d appsv1.Deployment) bool {
			sc := d.Spec.Template.Spec.SecurityContext
			return sc.RunAsUser == nil && sc.RunAsGroup == nil && *sc.RunAsNonRoot
		}},
		{"the container's securityContext is replaceable", []string{"--set", "securityContext.readOnlyRootFilesystem=false"}, func(d appsv1.Deployment) bool {
			return !*d.Spec.Template.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem
		}},
		{"extra arguments follow the chart's", []string{"--set", "extraArgs={--max-body-bytes=1048576}"}, func(d appsv1.Deployment) bool {
			args := d.Spec.Template.Spec.Containers[0].Args
			return args[len(args)-1] == "--max-body-bytes=1048576"
		}},
		{"extra environment variables", []string{"--set", "extraEnv[0].name=HTTPS_PROXY", "--set", "extraEnv[0].value=http://proxy:3128"}, func(d appsv1.Deployment) bool {
			env := d.Spec.Template.Spec.Containers[0].Env
			return len(env) == 1 && env[0].Name == "HTTPS_PROXY"
		}},
		{"extra volumes and mounts", []string{"--set", "extraVolumes[0].name=ca", "--set", "extraVolumes[0].configMap.name=corp-ca", "--set", "extraVolumeMounts[0].name=ca", "--set", "extraVolumeMounts[0].mountPath=/etc/corp-ca"}, func(d appsv1.Deployment) bool {
			s := d.Spec.Template.Spec
			return len(s.Volumes) == 1 && s.Volumes[0].ConfigMap.Name == "corp-ca" && len(s.Containers[0].VolumeMounts) == 1 && s.Containers[0].VolumeMounts[0].MountPath == "/etc/corp-ca"
		}},
		{"a topology spread constraint gets the pods' selector", []string{"--set", "topologySpreadConstraints[0].maxSkew=1", "--set", "topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone", "--set", "topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway"}, func(d appsv1.Deployment) bool {
			c := d.Spec.Template.Spec.TopologySpreadConstraints
			return len(c) == 1 && c[0].TopologyKey == "topology.kubernetes.io/zone" && c[0].LabelSelector.MatchLabels["app.kubernetes.io/instance"] == "tg"
		}},
		{"probe timing is tunable", []string{"--set", "livenessProbe.timeoutSeconds=3", "--set", "readinessProbe.periodSeconds=5", "--set", "startupProbe.failureThreshold=60"}, func(d appsv1.Deployment) bool {
			c := d.Spec.Template.Spec.Containers[0]
			return c.LivenessProbe.TimeoutSeconds == 3 && c.ReadinessProbe.PeriodSeconds == 5 && c.StartupProbe.FailureThreshold == 60 && c.LivenessProbe.HTTPGet.Path == "/healthz"
		}},
		{"host network on other ports", []string{"--set", "hostNetwork=true", "--set", "webhook.port=10250", "--set", "metrics.port=10251"}, func(d appsv1.Deployment) bool {
			s := d.Spec.Template.Spec
			c := s.Containers[0]
			return s.HostNetwork && s.DNSPolicy == corev1.DNSClusterFirstWithHostNet && slices.Contains(c.Args, "--addr=:10250") && slices.Contains(c.Args, "--metrics-addr=:10251") && c.Ports[0].ContainerPort == 10250
		}},
		{"an existing service account", []string{"--set", "serviceAccount.create=false", "--set", "serviceAccount.name=tenantguard-sa"}, func(d appsv1.Deployment) bool {
			return d.Spec.Template.Spec.ServiceAccountName == "tenantguard-sa" && slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--manager=system:serviceaccount:tenantguard-system:tenantguard-sa")
		}},
		{"metrics on the webhook port", []string{"--set", "metrics.port=0"}, func(d appsv1.Deployment) bool {
			return !slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--metrics-addr") })
		}},
		{"metrics on their own port by default", nil, func(d appsv1.Deployment) bool {
			return slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--metrics-addr=:8080")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := deployment(t, tt.args...); !tt.ok(d) {
				t.Errorf("not so:\n%+v", d.Spec.Template)
			}
		})
	}
}

// TestChartNamesAndToggles: name overrides, and what serviceAccount.create
// and rbac.create leave out.
func TestChartNamesAndToggles(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		want, gone []string
	}{
		{"fullnameOverride names every object", []string{"--set", "fullnameOverride=guard"}, []string{"Deployment/guard", "ClusterRole/guard", "ValidatingWebhookConfiguration/guard", "ConfigMap/guard-registry"}, []string{"Deployment/tg-tenantguard"}},
		{"nameOverride replaces the chart's name", []string{"--set", "nameOverride=admission"}, []string{"Deployment/tg-admission"}, nil},
		{"serviceAccount.create=false makes none", []string{"--set", "serviceAccount.create=false", "--set", "serviceAccount.name=sa"}, nil, []string{"ServiceAccount/tg-tenantguard"}},
		{"rbac.create=false makes no RBAC", []string{"--set", "rbac.create=false"}, nil, []string{"ClusterRole/tg-tenantguard", "ClusterRoleBinding/tg-tenantguard", "Role/tg-tenantguard", "RoleBinding/tg-tenantguard", "ClusterRole/tg-tenantguard-namespace-creator", "Role/tg-tenantguard-tls"}},
		{"the ServiceMonitor, rules, dashboard and NetworkPolicy are off by default", nil, nil, []string{"ServiceMonitor/tg-tenantguard", "PrometheusRule/tg-tenantguard", "ConfigMap/tg-tenantguard-dashboard", "NetworkPolicy/tg-tenantguard"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs := render(t, tt.args...)
			for _, id := range tt.want {
				if docs[id] == "" {
					t.Errorf("no %s", id)
				}
			}
			for _, id := range tt.gone {
				if docs[id] != "" {
					t.Errorf("%s rendered", id)
				}
			}
		})
	}
	var sa corev1.ServiceAccount
	decode(t, render(t, "--set", "serviceAccount.annotations.iam=role")["ServiceAccount/tg-tenantguard"], &sa)
	if sa.Annotations["iam"] != "role" {
		t.Errorf("ServiceAccount annotations %v", sa.Annotations)
	}
}

// TestChartWebhookExemptions: an objectSelector, extra matchConditions and
// break-glass groups reach all the webhooks; more exempt namespaces only
// the namespaces webhooks, for what is not a create (a namespace not
// created yet would be created unchecked, and a tenant namespace by that
// name would be checked by none).
func TestChartWebhookExemptions(t *testing.T) {
	docs := render(t, "--set", "webhook.exemptNamespaces={monitoring}", "--set", "webhook.objectSelector.matchLabels.checked=yes",
		"--set", "webhook.matchConditions[0].name=not-ci", "--set", "webhook.matchConditions[0].expression=!('ci' in request.userInfo.groups)",
		"--set", "webhook.breakGlassGroups={system:masters,oncall:break-glass}")
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	decode(t, docs["ValidatingWebhookConfiguration/tg-tenantguard"], &v)
	var m admissionregistrationv1.MutatingWebhookConfiguration
	decode(t, docs["MutatingWebhookConfiguration/tg-tenantguard"], &m)
	type hook struct {
		name       string
		policy     admissionregistrationv1.FailurePolicyType
		namespaces *[]string
		objects    map[string]string
		conditions []admissionregistrationv1.MatchCondition
	}
	var hooks []hook
	for _, w := range v.Webhooks {
		if w.Name == "every-kind.tenantguard.io" {
			// The catch-all has no twin: it ignores failures for everyone.
			extra := slices.ContainsFunc(w.MatchConditions, func(c admissionregistrationv1.MatchCondition) bool { return c.Name == "not-ci" })
			if *w.FailurePolicy != admissionregistrationv1.Ignore || slices.Contains(w.NamespaceSelector.MatchExpressions[0].Values, "monitoring") || w.ObjectSelector.MatchLabels["checked"] != "yes" || !extra {
				t.Errorf("catch-all webhook: %+v", w)
			}
			continue
		}
		hooks = append(hooks, hook{w.Name, *w.FailurePolicy, &w.NamespaceSelector.MatchExpressions[0].Values, w.ObjectSelector.MatchLabels, w.MatchConditions})
	}
	for _, w := range m.Webhooks {
		hooks = append(hooks, hook{w.Name, *w.FailurePolicy, &w.NamespaceSelector.MatchExpressions[0].Values, w.ObjectSelector.MatchLabels, w.MatchConditions})
	}
	if len(hooks) != 8 {
		t.Fatalf("%d webhooks, want 8 (each with its break-glass twin)", len(hooks))
	}
	groups := `["system:masters","oncall:break-glass"]`
	for _, h := range hooks {
		last := h.conditions[len(h.conditions)-1]
		glass := h.conditions[len(h.conditions)-2]
		twin := strings.Contains(h.name, ".break-glass.")
		exempt := slices.ContainsFunc(h.conditions, func(c admissionregistrationv1.MatchCondition) bool {
			return c.Name == "not-an-exempt-namespace" && c.Expression == `request.operation == "CREATE" || !(request.name in ["monitoring"]) || [object, oldObject].exists(o, o != null && "tenantguard.io/tenant" in o.metadata.?labels.orValue({}))`
		})
		switch {
		case slices.Contains(*h.namespaces, "monitoring"):
			t.Errorf("%s: monitoring exempt by the namespaceSelector, creates included: %v", h.name, *h.namespaces)
		case exempt != strings.HasPrefix(h.name, "namespaces."):
			t.Errorf("%s: exempt namespaces' condition %t, want it on the namespaces webhooks only: %v", h.name, exempt, h.conditions)
		case h.objects["checked"] != "yes":
			t.Errorf("%s: objectSelector %v", h.name, h.objects)
		case last.Name != "not-ci":
			t.Errorf("%s: extra matchCondition missing: %v", h.name, h.conditions)
		case twin && (h.policy != admissionregistrationv1.Ignore || glass.Expression != "request.userInfo.groups.exists(g, g in "+groups+")"):
			t.Errorf("%s: break-glass twin with policy %s and %q", h.name, h.policy, glass.Expression)
		case !twin && (h.policy != admissionregistrationv1.Fail || glass.Expression != "!request.userInfo.groups.exists(g, g in "+groups+")"):
			t.Errorf("%s: main webhook with policy %s and %q", h.name, h.policy, glass.Expression)
		}
	}
	decode(t, render(t, "--set", "webhook.breakGlassGroups=null")["ValidatingWebhookConfiguration/tg-tenantguard"], &v)
	if len(v.Webhooks) != 3 {
		t.Errorf("%d validating webhooks without break-glass groups, want 3 (namespaces, workloads, the catch-all)", len(v.Webhooks))
	}
}

// TestChartClusterRoleBindingsByName: the server may create, change and
// delete its one ClusterRoleBinding, and no other.
func TestChartClusterRoleBindingsByName(t *testing.T) {
	var role rbacv1.ClusterRole
	decode(t, render(t)["ClusterRole/tg-tenantguard"], &role)
	for _, r := range role.Rules {
		if !slices.Contains(r.Resources, "clusterrolebindings") {
			continue
		}
		writes := slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" })
		if writes && !slices.Equal(r.ResourceNames, []string{"tg-tenantguard-owners"}) {
			t.Errorf("ClusterRoleBinding %v not limited by name: %v", r.Verbs, r.ResourceNames)
		}
	}
}

// TestChartExtraClusterRules: rbac.extraClusterRules lets the background
// audit list the kinds of a rule family of one's own, added to the
// ClusterRole as given; a rule without verbs is refused.
func TestChartExtraClusterRules(t *testing.T) {
	var role rbacv1.ClusterRole
	decode(t, render(t, "--set-json", `rbac.extraClusterRules=[{"apiGroups":[""],"resources":["configmaps"],"verbs":["list"]}]`)["ClusterRole/tg-tenantguard"], &role)
	want := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}
	if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return reflect.DeepEqual(r, want) }) {
		t.Errorf("the ClusterRole's rules %v lack %v", role.Rules, want)
	}
	refusal{"a rule without verbs", []string{"--set-json", `rbac.extraClusterRules=[{"resources":["configmaps"]}]`}, "verbs"}.check(t)
	refusal{"rules with no ClusterRole to add them to", []string{"--set", "rbac.create=false", "--set-json", `rbac.extraClusterRules=[{"resources":["configmaps"],"verbs":["list"]}]`}, "rbac.extraClusterRules needs rbac.create=true"}.check(t)
}

// TestChartMonitoring: the ServiceMonitor scrapes the metrics port with the
// given labels and never skips TLS verification; the NetworkPolicy opens the
// webhook port and the metrics port to the configured peers; the alerts and
// the dashboard use metrics the server exports.
func TestChartMonitoring(t *testing.T) {
	docs := render(t, "--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.labels.release=kube-prometheus",
		"--set", "prometheusRule.enabled=true", "--set", "prometheusRule.labels.release=kube-prometheus",
		"--set", "grafanaDashboard.enabled=true", "--set", "networkPolicy.enabled=true")
	sm := docs["ServiceMonitor/tg-tenantguard"]
	for _, want := range []string{"release: kube-prometheus", "port: metrics", "scheme: http\n"} {
		if !strings.Contains(sm, want) {
			t.Errorf("ServiceMonitor lacks %q:\n%s", want, sm)
		}
	}
	onWebhookPort := render(t, "--set", "serviceMonitor.enabled=true", "--set", "metrics.port=0")["ServiceMonitor/tg-tenantguard"]
	for _, doc := range []string{sm, onWebhookPort} {
		if strings.Contains(doc, "insecureSkipVerify") {
			t.Errorf("ServiceMonitor skips TLS verification:\n%s", doc)
		}
	}
	if !strings.Contains(onWebhookPort, "key: ca.crt") {
		t.Errorf("ServiceMonitor on the webhook port does not verify against the CA:\n%s", onWebhookPort)
	}
	rules := docs["PrometheusRule/tg-tenantguard"]
	for _, alert := range []string{"TenantguardWebhookUnavailable", "TenantguardWebhookCallsFailing", "TenantguardRegistryRefused", "TenantguardWebhookNamespacesLeftOut", "release: kube-prometheus"} {
		if !strings.Contains(rules, alert) {
			t.Errorf("PrometheusRule lacks %s", alert)
		}
	}
	var dashboard corev1.ConfigMap
	decode(t, docs["ConfigMap/tg-tenantguard-dashboard"], &dashboard)
	for _, metric := range []string{"tenantguard_admission_requests_total", "tenantguard_rule_violations_total", "tenantguard_admission_duration_seconds_bucket", "tenantguard_reloads_total", "tenantguard_reload_last_failed", "tenantguard_generation", "tenantguard_tenant_quota_used", "tenantguard_tenant_quota_limit", "sum by (tenant)"} {
		if !strings.Contains(dashboard.Data["tenantguard.json"], metric) {
			t.Errorf("the dashboard does not chart %s", metric)
		}
	}
	var np networkingv1.NetworkPolicy
	decode(t, docs["NetworkPolicy/tg-tenantguard"], &np)
	if len(np.Spec.Ingress) != 2 || np.Spec.Ingress[0].From != nil || np.Spec.Ingress[1].From[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "prometheus" {
		t.Errorf("NetworkPolicy ingress %+v: want the webhook port from anywhere and metrics from Prometheus", np.Spec.Ingress)
	}
	decode(t, render(t, "--set", "networkPolicy.enabled=true", "--set", "networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/24")["NetworkPolicy/tg-tenantguard"], &np)
	if np.Spec.Ingress[0].From[0].IPBlock.CIDR != "10.0.0.0/24" {
		t.Errorf("webhookFrom not applied: %+v", np.Spec.Ingress[0])
	}
}

// TestChartTestHook: helm test sends a dry-run the webhook must deny, as an
// identity allowed to create namespaces, with the server's image.
func TestChartTestHook(t *testing.T) {
	docs := render(t, "--set", "tenantLabel=example.com/tenant")
	var pod corev1.Pod
	decode(t, docs["Pod/tg-tenantguard-test"], &pod)
	c := pod.Spec.Containers[0]
	if pod.Annotations["helm.sh/hook"] != "test" || pod.Spec.ServiceAccountName != "tg-tenantguard-test" || c.Image != "ghcr.io/tenantguard/tenantguard:0.1.0" {
		t.Errorf("test pod %+v", pod)
	}
	if !slices.Equal(c.Args, []string{"webhook-check", "--namespace=tg-tenantguard-test", "--tenant-label=example.com/tenant"}) {
		t.Errorf("test pod args %q", c.Args)
	}
	var role rbacv1.ClusterRole
	decode(t, docs["ClusterRole/tg-tenantguard-test"], &role)
	if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Verbs, []string{"create"}) || !slices.Equal(role.Rules[0].Resources, []string{"namespaces"}) {
		t.Errorf("test role %+v: want namespace create only", role.Rules)
	}
}

// TestChartCIValuesLint: every chart-testing values file lints strictly.
func TestChartCIValuesLint(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ci/*-values.yaml: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			if _, err := helm(t, "lint", "--strict", chartDir, "-f", file); err != nil {
				t.Errorf("helm lint --strict -f %s: %v", file, err)
			}
		})
	}
}

// TestChartPolicyOverlay: policyOverlay's files (a rule family of one's
// own, given with --set-file) are a ConfigMap mounted as --policy-overlay,
// and what the ConfigMap holds loads as the embedded library with the
// family added.
func TestChartPolicyOverlay(t *testing.T) {
	family := filepath.Join(fixtures.Dir(), "family", "configmaps")
	var args []string
	for _, name := range []string{"configmaps.rego", "configmaps_test.rego", "configmaps.cel"} {
		args = append(args, "--set-file", "policyOverlay."+strings.ReplaceAll(name, ".", `\.`)+"="+filepath.Join(family, name))
	}
	docs := render(t, args...)
	var d appsv1.Deployment
	decode(t, docs["Deployment/tg-tenantguard"], &d)
	c := d.Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--policy-overlay=/policy-overlay") || slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--policy-dir") }) {
		t.Errorf("args %v, want --policy-overlay and no --policy-dir", c.Args)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "policy-overlay" && m.MountPath == "/policy-overlay" }) ||
		!slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
			return v.Name == "policy-overlay" && v.ConfigMap != nil && v.ConfigMap.Name == "tg-tenantguard-policy-overlay"
		}) {
		t.Errorf("the overlay's ConfigMap is not mounted: %v %v", c.VolumeMounts, d.Spec.Template.Spec.Volumes)
	}
	var cm corev1.ConfigMap
	decode(t, docs["ConfigMap/tg-tenantguard-policy-overlay"], &cm)
	dir := t.TempDir()
	for name, src := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := policydir.Source{Overlay: dir}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cat.IDs(), "configmap-secrets") || !slices.Contains(cat.IDs(), "host-network") {
		t.Errorf("the mounted overlay loads as %v, want the embedded rules and configmap-secrets", cat.IDs())
	}
	if docs["ConfigMap/tg-tenantguard-policies"] != "" {
		t.Error("a policies ConfigMap rendered without policies")
	}
}
