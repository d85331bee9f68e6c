package tests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/policydir"
	"github.com/tenantguard/tenantguard/webhook/configuration"
	"github.com/tenantguard/tenantguard/webhook/selfsigned"
)

// The chart is tested with the real helm CLI that `make tools` installs.

var chartDir = filepath.Join("..", "charts", "tenantguard")

func helm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join("..", "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: run `make tools` (make test does)", err)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), &helmError{stderr.String()}
	}
	return string(out), nil
}

type helmError struct{ stderr string }

func (e *helmError) Error() string { return e.stderr }

var registryArg = "registry.document=" + filepath.Join("..", "examples", "registry.yaml")

// render renders the chart as release tg in tenantguard-system and returns
// its documents by KIND/NAME.
func render(t testing.TB, args ...string) map[string]string {
	t.Helper()
	out, err := helm(t, append([]string{"template", "tg", chartDir, "-n", "tenantguard-system", "--set-file", registryArg}, args...)...)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	return byKindName(t, out)
}

// byKindName splits multi-document YAML into documents by KIND/NAME.
func byKindName(t testing.TB, text string) map[string]string {
	t.Helper()
	docs := map[string]string{}
	for doc := range strings.SplitSeq(text, "\n---\n") {
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("YAML: %v\n%s", err, doc)
		}
		if head.Kind != "" {
			docs[head.Kind+"/"+head.Metadata.Name] = doc
		}
	}
	return docs
}

func decode(t testing.TB, doc string, into any) {
	t.Helper()
	if doc == "" {
		t.Fatal("no such document")
	}
	if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
		t.Fatal(err)
	}
}

func TestChartLintsStrictly(t *testing.T) {
	if out, err := helm(t, "lint", "--strict", chartDir, "--set-file", registryArg); err != nil {
		t.Fatalf("helm lint --strict: %v\n%s", err, out)
	}
}

func TestChartRejectsBadValues(t *testing.T) {
	tests := []refusal{
		{"no replicas", []string{"--set", "replicaCount=0", "--set-file", registryArg}, "at '/replicaCount': minimum: got 0, want 1"},
		{"an unknown failure policy", []string{"--set", "webhook.failurePolicy=Sometimes", "--set-file", registryArg}, "at '/webhook/failurePolicy': value must be one of 'Fail', 'Ignore'"},
		{"a timeout the API server refuses", []string{"--set", "webhook.timeoutSeconds=60", "--set-file", registryArg}, "at '/webhook/timeoutSeconds': maximum: got 60, want 30"},
		{"an unknown TLS mode", []string{"--set", "tls.mode=manual", "--set-file", registryArg}, "at '/tls/mode': value must be one of 'builtin', 'cert-manager', 'secret'"},
		{"a lifetime that is not a duration", []string{"--set", "tls.builtin.certValidity=90d", "--set-file", registryArg}, "at '/tls/builtin/certValidity': '90d' does not match pattern"},
		{"a plain-HTTP webhook URL", []string{"--set", "webhook.url=http://127.0.0.1:9443", "--set-file", registryArg}, "at '/webhook/url': 'http://127.0.0.1:9443' does not match pattern"},
		{"a misspelt value", []string{"--set", "replicas=3", "--set-file", registryArg}, "additional properties 'replicas' not allowed"},
		{"a memory limit that is not a size", []string{"--set", "memoryLimit=lots", "--set-file", registryArg}, "at '/memoryLimit': 'lots' does not match pattern"},
		{"a GC percent below -1", []string{"--set", "gcPercent=-2", "--set-file", registryArg}, "at '/gcPercent': minimum: got -2, want -1"},
		{"a client CA that is not PEM", []string{"--set", "webhook.clientCA=abc", "--set-file", registryArg}, "at '/webhook/clientCA': 'abc' does not match pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t) })
	}
}

// TestChartWebhooksMatchTheGoBuilder keeps the chart's webhook configurations
// identical to webhook/configuration, which the e2e tests install: for the
// embedded library, from the chart's generated files/webhook-rules.yaml, and
// for a library of one's own, from what `tenantguard rules -o webhook-rules`
// prints for it, given as the value webhook.rules.
func TestChartWebhooksMatchTheGoBuilder(t *testing.T) {
	counted := []string{"--set", "countedResources={pods,configmaps,deployments.apps,widgets.example.com}"}
	dir := familyLibrary(t)
	code, routes, errs := tenantguard(t, "rules", "--policy-dir", dir, "-o", "webhook-rules")
	if code != 0 {
		t.Fatalf("tenantguard rules: exit %d: %s", code, errs)
	}
	routesFile := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routesFile, []byte(routes), 0o600); err != nil {
		t.Fatal(err)
	}
	family, err := policydir.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct {
		args    []string
		catalog *catalog.Catalog
	}{
		"the embedded library":   {counted, nil},
		"a library of one's own": {append(slices.Clone(counted), "--set-file", "webhook.rules="+routesFile), family},
	} {
		t.Run(name, func(t *testing.T) {
			docs := render(t, tt.args...)
			port := int32(443)
			o := configuration.Options{
				Service:   &admissionregistrationv1.ServiceReference{Namespace: "tenantguard-system", Name: "tg-tenantguard", Port: &port},
				Namespace: "tenantguard-system",
				QuotaResources: []schema.GroupResource{
					{Resource: "pods"}, {Resource: "configmaps"}, {Group: "apps", Resource: "deployments"}, {Group: "example.com", Resource: "widgets"},
				},
				Catalog:          tt.catalog,
				BreakGlassGroups: []string{"system:masters"},
			}
			var validating admissionregistrationv1.ValidatingWebhookConfiguration
			decode(t, docs["ValidatingWebhookConfiguration/tg-tenantguard"], &validating)
			if want := configuration.Validating(o).Webhooks; !reflect.DeepEqual(validating.Webhooks, want) {
				t.Errorf("validating webhooks differ from webhook/configuration:\n got %+v\nwant %+v", validating.Webhooks, want)
			}
			var mutating admissionregistrationv1.MutatingWebhookConfiguration
			decode(t, docs["MutatingWebhookConfiguration/tg-tenantguard"], &mutating)
			if want := configuration.Mutating(o).Webhooks; !reflect.DeepEqual(mutating.Webhooks, want) {
				t.Errorf("mutating webhooks differ from webhook/configuration:\n got %+v\nwant %+v", mutating.Webhooks, want)
			}
		})
	}
}

// TestChartRBACMatchesDeploy keeps the chart's RBAC identical to
// deploy/rbac/tenantguard.yaml, the default instance's, with the default
// values but that instance.
func TestChartRBACMatchesDeploy(t *testing.T) {
	docs := render(t, "--set", "instance=tenantguard")
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "rbac", "tenantguard.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	deploy := byKindName(t, string(raw))
	pairs := [][2]string{
		{"ClusterRole/tg-tenantguard", "ClusterRole/tenantguard"},
		{"ClusterRole/tenantguard-namespace-creator", "ClusterRole/tenantguard-namespace-creator"},
		{"ClusterRole/tenantguard-namespace-deleter", "ClusterRole/tenantguard-namespace-deleter"},
	}
	for _, p := range pairs {
		var chart, shipped rbacv1.ClusterRole
		decode(t, docs[p[0]], &chart)
		decode(t, deploy[p[1]], &shipped)
		if !reflect.DeepEqual(chart.Rules, shipped.Rules) {
			t.Errorf("%s rules differ from deploy/rbac's %s:\n got %+v\nwant %+v", p[0], p[1], chart.Rules, shipped.Rules)
		}
	}
	var chartRole, shippedRole rbacv1.Role
	decode(t, docs["Role/tg-tenantguard"], &chartRole)
	decode(t, deploy["Role/tenantguard"], &shippedRole)
	if !reflect.DeepEqual(chartRole.Rules, shippedRole.Rules) {
		t.Errorf("Role rules differ from deploy/rbac's")
	}
	// built-in TLS, whose Secret and webhook configurations the chart
	// names after the release: a release named as the default instance
	tls := render(t, "--set", "instance=tenantguard", "--set", "fullnameOverride=tenantguard")
	var chartTLS, shippedTLS rbacv1.Role
	decode(t, tls["Role/tenantguard-tls"], &chartTLS)
	decode(t, deploy["Role/tenantguard-tls"], &shippedTLS)
	var chartWebhooks, shippedWebhooks rbacv1.ClusterRole
	decode(t, tls["ClusterRole/tenantguard-tls"], &chartWebhooks)
	decode(t, deploy["ClusterRole/tenantguard-tls"], &shippedWebhooks)
	if len(shippedTLS.Rules) == 0 || !reflect.DeepEqual(chartTLS.Rules, shippedTLS.Rules) || len(shippedWebhooks.Rules) == 0 || !reflect.DeepEqual(chartWebhooks.Rules, shippedWebhooks.Rules) {
		t.Errorf("built-in TLS rules differ from deploy/rbac's:\n got %+v %+v\nwant %+v %+v", chartTLS.Rules, chartWebhooks.Rules, shippedTLS.Rules, shippedWebhooks.Rules)
	}
}

func TestChartDeploymentIsSafeByDefault(t *testing.T) {
	docs := render(t)
	var d appsv1.Deployment
	decode(t, docs["Deployment/tg-tenantguard"], &d)
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	checks := []struct {
		name string
		ok   bool
	}{
		{"two replicas", *d.Spec.Replicas == 2},
		{"non-root", pod.SecurityContext != nil && *pod.SecurityContext.RunAsNonRoot},
		{"read-only root filesystem", c.SecurityContext != nil && *c.SecurityContext.ReadOnlyRootFilesystem},
		{"no privilege escalation", !*c.SecurityContext.AllowPrivilegeEscalation},
		{"readiness on /readyz", c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet.Path == "/readyz"},
		{"liveness on /healthz", c.LivenessProbe != nil && c.LivenessProbe.HTTPGet.Path == "/healthz"},
		{"anti-affinity", pod.Affinity != nil && pod.Affinity.PodAntiAffinity != nil},
		{"resource requests and a memory limit", !c.Resources.Requests.Cpu().IsZero() && !c.Resources.Requests.Memory().IsZero() && !c.Resources.Limits.Memory().IsZero()},
		{"the service account's name as manager", slices.Contains(c.Args, "--manager=system:serviceaccount:tenantguard-system:tg-tenantguard")},
		{"a shutdown delay", slices.Contains(c.Args, "--shutdown-delay=5s")},
		{"a grace period longer than delay and drain", pod.TerminationGracePeriodSeconds != nil && *pod.TerminationGracePeriodSeconds >= 25},
		{"a PodDisruptionBudget", docs["PodDisruptionBudget/tg-tenantguard"] != ""},
		{"built-in TLS in the release's Secret", slices.Contains(c.Args, "--tls-secret=tenantguard-system/tg-tenantguard-tls")},
		{"no cert-manager objects", docs["Certificate/tg-tenantguard"] == "" && docs["Issuer/tg-tenantguard-ca"] == ""},
		{"no ServiceMonitor unless asked", docs["ServiceMonitor/tg-tenantguard"] == ""},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("not %s", c.name)
		}
	}
}

func TestChartSecretModeAndMonitoring(t *testing.T) {
	docs := render(t, "--set", "tls.mode=secret", "--set", "tls.secretName=my-tls", "--set", "tls.caBundle=Q0E=",
		"--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true")
	if docs["Certificate/tg-tenantguard"] != "" || docs["Issuer/tg-tenantguard-ca"] != "" {
		t.Error("cert-manager objects in secret mode")
	}
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	decode(t, docs["ValidatingWebhookConfiguration/tg-tenantguard"], &v)
	if string(v.Webhooks[0].ClientConfig.CABundle) != "CA" {
		t.Errorf("caBundle %q, want the given one", v.Webhooks[0].ClientConfig.CABundle)
	}
	var d appsv1.Deployment
	decode(t, docs["Deployment/tg-tenantguard"], &d)
	if d.Spec.Template.Spec.Volumes[0].Secret.SecretName != "my-tls" {
		t.Error("the Deployment does not mount the given Secret")
	}
	for _, kind := range []string{"ServiceMonitor/tg-tenantguard", "PrometheusRule/tg-tenantguard"} {
		if docs[kind] == "" {
			t.Errorf("no %s", kind)
		}
	}
}

// TestChartClientCA checks that a client CA is mounted and handed to the
// server, so that only the API server's calls are answered.
func TestChartClientCA(t *testing.T) {
	ca, err := selfsigned.NewCA("webhook-callers")
	if err != nil {
		t.Fatal(err)
	}
	docs := render(t, "--set", "webhook.clientCA="+string(ca.PEM))
	var cm corev1.ConfigMap
	decode(t, docs["ConfigMap/tg-tenantguard-client-ca"], &cm)
	if cm.Data["ca.crt"] != string(ca.PEM) {
		t.Errorf("ca.crt %q, want the given CA", cm.Data["ca.crt"])
	}
	var d appsv1.Deployment
	decode(t, docs["Deployment/tg-tenantguard"], &d)
	spec := d.Spec.Template.Spec
	if !slices.Contains(spec.Containers[0].Args, "--client-ca-file=/client-ca/ca.crt") {
		t.Errorf("args %v lack --client-ca-file", spec.Containers[0].Args)
	}
	mounted := slices.ContainsFunc(spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "client-ca" && m.MountPath == "/client-ca" })
	volume := slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == "client-ca" && v.ConfigMap != nil && v.ConfigMap.Name == "tg-tenantguard-client-ca"
	})
	if !mounted || !volume {
		t.Errorf("the client CA ConfigMap is not mounted at /client-ca (mount %v, volume %v)", mounted, volume)
	}
	if plain := render(t); plain["ConfigMap/tg-tenantguard-client-ca"] != "" {
		t.Error("a client CA ConfigMap without webhook.clientCA")
	}
}

// TestChartBuiltinTLS checks that the built-in rotation's flags and RBAC name
// the objects the chart creates, and nothing else.
func TestChartBuiltinTLS(t *testing.T) {
	docs := render(t)
	var d appsv1.Deployment
	decode(t, docs["Deployment/tg-tenantguard"], &d)
	args := d.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{
		"--tls-dns-name=tg-tenantguard.tenantguard-system.svc",
		"--tls-dns-name=tg-tenantguard.tenantguard-system.svc.cluster.local",
		"--webhook-configuration=tg-tenantguard",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("no %s in %q", want, args)
		}
	}
	if docs["Service/tg-tenantguard"] == "" || docs["ValidatingWebhookConfiguration/tg-tenantguard"] == "" || docs["MutatingWebhookConfiguration/tg-tenantguard"] == "" {
		t.Fatal("the names the flags use are not the chart's objects")
	}
	if len(d.Spec.Template.Spec.Volumes) != 0 {
		t.Errorf("volumes %v in builtin mode; the certificate is served from memory", d.Spec.Template.Spec.Volumes)
	}
	var role rbacv1.Role
	decode(t, docs["Role/tg-tenantguard-tls"], &role)
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "update"}, ResourceNames: []string{"tg-tenantguard-tls"}},
	}
	if !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("TLS Role rules %+v, want %+v", role.Rules, want)
	}
	var clusterRole rbacv1.ClusterRole
	decode(t, docs["ClusterRole/tg-tenantguard-tls"], &clusterRole)
	if r := clusterRole.Rules; len(r) != 1 || !reflect.DeepEqual(r[0].ResourceNames, []string{"tg-tenantguard"}) || !reflect.DeepEqual(r[0].Verbs, []string{"get", "patch"}) {
		t.Errorf("TLS ClusterRole rules %+v, want get/patch on tg-tenantguard only", r)
	}
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	decode(t, docs["ValidatingWebhookConfiguration/tg-tenantguard"], &v)
	if len(v.Annotations) != 0 || len(v.Webhooks[0].ClientConfig.CABundle) != 0 {
		t.Errorf("builtin mode rendered annotations %v or a caBundle; the server writes the bundle", v.Annotations)
	}
}

func TestChartCertManagerMode(t *testing.T) {
	docs := render(t, "--set", "tls.mode=cert-manager")
	for _, kind := range []string{"Certificate/tg-tenantguard", "Certificate/tg-tenantguard-ca", "Issuer/tg-tenantguard-ca", "Issuer/tg-tenantguard-selfsigned"} {
		if docs[kind] == "" {
			t.Errorf("no %s", kind)
		}
	}
	if docs["Role/tg-tenantguard-tls"] != "" {
		t.Error("built-in rotation RBAC in cert-manager mode")
	}
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	decode(t, docs["ValidatingWebhookConfiguration/tg-tenantguard"], &v)
	if v.Annotations["cert-manager.io/inject-ca-from"] != "tenantguard-system/tg-tenantguard" {
		t.Error("no cert-manager CA injection in cert-manager mode")
	}
	var d appsv1.Deployment
	decode(t, docs["Deployment/tg-tenantguard"], &d)
	args := d.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--tls-cert-file=/tls/tls.crt") || d.Spec.Template.Spec.Volumes[0].Secret.SecretName != "tg-tenantguard-tls" {
		t.Errorf("cert-manager mode does not serve the Certificate's Secret: args %q", args)
	}
}
