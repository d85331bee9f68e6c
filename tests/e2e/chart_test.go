package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/tests/live"
)

// The release as `helm install tenantguard charts/tenantguard -n
// tenantguard-system` names it.
const (
	release          = "tenantguard"
	releaseNamespace = "tenantguard-system"
	serviceAccount   = "system:serviceaccount:" + releaseNamespace + ":" + release
)

// TestChartOnTheAPIServer installs the rendered chart on its own control
// plane with server-side apply, runs the chart's Deployment command outside
// the cluster (as the chart's ServiceAccount, with only the chart's RBAC,
// the webhook URL pointed at it: the one test-only value), and checks that
// the chart's webhook configurations route tenant requests to it and that
// its exemptions keep the cluster working once it is dead.
func TestChartOnTheAPIServer(t *testing.T) {
	ctx := t.Context()
	// configmaps counted too, so that a kube-system ConfigMap would reach
	// the webhook but for the namespace exemption
	chart := installChart(t, append(exampleRegistry(), "--set", "countedResources={pods,persistentvolumeclaims,services,configmaps}", "--set", "webhook.exemptNamespaces={oil-tools}")...)
	cp, rendered, url, port, applied := chart.cp, chart.rendered, chart.url, chart.port, chart.applied
	force := true
	kinds := map[string]int{}
	for _, id := range applied {
		kinds[strings.Split(id, "/")[0]]++
	}
	t.Logf("applied %d objects: %v", len(applied), kinds)
	for _, kind := range []string{"ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service", "PodDisruptionBudget", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		if kinds[kind] == 0 {
			t.Errorf("no %s applied", kind)
		}
	}

	stop, logs := runChartServer(t, cp, rendered, port)
	caPEM := waitForChartServer(t, cp, url, logs)

	api := cp.Client.AdmissionregistrationV1()
	v, err := api.ValidatingWebhookConfigurations().Get(ctx, release, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := api.MutatingWebhookConfigurations().Get(ctx, release, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{v.Webhooks[0].ClientConfig.CABundle, v.Webhooks[1].ClientConfig.CABundle, m.Webhooks[0].ClientConfig.CABundle, m.Webhooks[1].ClientConfig.CABundle} {
		if string(b) != string(caPEM) {
			t.Fatal("the CA bundle in the webhook configurations is not the Secret's")
		}
	}

	t.Run("an upgrade that applies the chart again keeps the injected CA bundle", func(t *testing.T) {
		if _, err := cp.Apply(ctx, rendered, metav1.PatchOptions{FieldManager: "helm", Force: &force}); err != nil {
			t.Fatal(err)
		}
		v, err := api.ValidatingWebhookConfigurations().Get(ctx, release, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(v.Webhooks[0].ClientConfig.CABundle) != string(caPEM) {
			t.Error("re-applying the chart removed the CA bundle")
		}
	})
	t.Run("a tenant request is decided by the server behind the chart's webhooks", func(t *testing.T) {
		_, err := cp.As("alice").CoreV1().Namespaces().Create(ctx, namespace("oil-chart", nil), metav1.CreateOptions{})
		wantAllowed(t, err)
		ns, err := cp.Client.CoreV1().Namespaces().Get(ctx, "oil-chart", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ns.Labels[tenantLabel] != "oil" {
			t.Errorf("labels %v: the mutating webhook did not add the tenant label", ns.Labels)
		}
		_, err = cp.As("mallory").CoreV1().Namespaces().Create(ctx, namespace("oil-mallory", nil), metav1.CreateOptions{})
		wantDenied(t, err, "namespace-ownership")
		_, err = cp.As("alice").CoreV1().Pods("oil-chart").Create(ctx, pod("host", func(s *corev1.PodSpec) { s.HostNetwork = true }), dryRun)
		wantDenied(t, err, "host-network")
	})
	t.Run("the server says when the webhook configurations leave out what the rules judge", func(t *testing.T) {
		const routed, unrouted = "the webhook configurations send every request the rules in force judge", "validating services CREATE"
		// said waits until the server's logs have said text n times.
		said := func(what, text string, n int) {
			t.Helper()
			eventually(t, what, func(context.Context) error {
				if strings.Count(logs.String(), text) < n {
					return errors.New("not said yet")
				}
				return nil
			})
		}
		said("the routes checked", routed, 1)
		before, err := api.ValidatingWebhookConfigurations().Get(ctx, release, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// edit changes each installed webhook, or with nil puts them back as
		// they were (the test's cleanup does if it has not)
		edit := func(change func(w *admissionregistrationv1.ValidatingWebhook)) {
			t.Helper()
			// the server's CA rotation writes the configurations too
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				edited, err := api.ValidatingWebhookConfigurations().Get(ctx, release, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if change == nil {
					edited.Webhooks = before.Webhooks
				} else {
					for i := range edited.Webhooks {
						change(&edited.Webhooks[i])
					}
				}
				_, err = api.ValidatingWebhookConfigurations().Update(ctx, edited, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		restored := false
		t.Cleanup(func() {
			if !restored {
				edit(nil)
			}
		})
		edit(func(w *admissionregistrationv1.ValidatingWebhook) {
			for j := range w.Rules {
				w.Rules[j].Resources = slices.DeleteFunc(w.Rules[j].Resources, func(res string) bool { return res == "services" })
			}
		})
		said("the services left out said", unrouted, 1)
		edit(nil)
		said("the routes said whole again", routed, 2)

		// a namespace selector on another label than the registry's (the
		// chart's tenantLabel set wrong) leaves every tenant namespace out
		// of the workloads webhook
		const unselected = "the namespace selectors of webhooks that judge tenants' requests leave out tenant namespaces"
		edit(func(w *admissionregistrationv1.ValidatingWebhook) {
			if strings.HasPrefix(w.Name, "workloads.") {
				w.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "capsule.clastix.io/tenant", Operator: metav1.LabelSelectorOpExists}}}
			}
		})
		said("the tenant namespaces left out said", unselected, 1)
		if !strings.Contains(logs.String(), "validating workloads.") || !strings.Contains(logs.String(), " tenant namespaces (") {
			t.Errorf("the warning names neither the webhook nor a namespace it leaves out:\n%s", logs.String())
		}
		edit(nil)
		said("the selectors said whole again", routed, 3)

		// an object selector, which a tenant gets around by labelling its
		// objects
		edit(func(w *admissionregistrationv1.ValidatingWebhook) {
			if strings.HasPrefix(w.Name, "workloads.") {
				w.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist}}}
			}
		})
		said("the object selector said", "webhooks that judge tenants' requests have an object selector", 1)
		if !strings.Contains(logs.String(), `"objectSelectors":"!skip: validating workloads.`) {
			t.Errorf("the warning does not name the object selector:\n%s", logs.String())
		}
		edit(nil)
		restored = true
		said("the object selector's removal said", routed, 4)
	})
	t.Run("an exempt namespace a tenant creates is judged, and so is what runs in it", func(t *testing.T) {
		// exempt, but not created yet: a tenant taking its name must not
		// get a namespace nothing checks
		_, err := cp.As("mallory").CoreV1().Namespaces().Create(ctx, namespace("oil-tools", map[string]string{tenantLabel: "oil"}), metav1.CreateOptions{})
		wantDenied(t, err, "namespace-ownership")
		_, err = cp.As("alice").CoreV1().Namespaces().Create(ctx, namespace("oil-tools", map[string]string{tenantLabel: "oil"}), metav1.CreateOptions{})
		wantAllowed(t, err)
		_, err = cp.As("alice").CoreV1().Pods("oil-tools").Create(ctx, pod("host", func(s *corev1.PodSpec) { s.HostNetwork = true }), dryRun)
		wantDenied(t, err, "host-network")
	})
	t.Run("the helm test hook passes as the identity the chart gives it", func(t *testing.T) {
		helmTestPasses(t, cp, rendered)
	})
	t.Run("the chart's RBAC lets the server keep the companions", func(t *testing.T) {
		eventually(t, "companions of oil-chart", func(ctx context.Context) error {
			_, err := cp.Client.CoreV1().ResourceQuotas("oil-chart").Get(ctx, "tenantguard-quota", metav1.GetOptions{})
			return err
		})
	})

	stop()
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "forbidden") {
			t.Errorf("the chart's RBAC lacks a permission: %s", line)
		}
	}
	t.Run("with the server dead, only tenant requests fail, and closed", func(t *testing.T) {
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}}
		if _, err := cp.Client.CoordinationV1().Leases("kube-node-lease").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Cluster administrators of no break-glass group (the tenants group
		// gives them RBAC's cluster-admin): the namespace exemptions, not the
		// break-glass webhooks, let their requests through.
		admin := cp.As("platform-admin")
		controller := cp.As("system:serviceaccount:kube-system:replicaset-controller", "system:serviceaccounts", "system:serviceaccounts:kube-system")
		tests := []struct {
			name string
			do   func(ctx context.Context, c kubernetes.Interface) error
			as   kubernetes.Interface
		}{
			{"a ConfigMap is created in kube-system", func(ctx context.Context, c kubernetes.Interface) error {
				_, err := c.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-info-copy"}}, metav1.CreateOptions{})
				return err
			}, admin},
			{"a node Lease is renewed in kube-node-lease", func(ctx context.Context, c kubernetes.Interface) error {
				l, err := c.CoordinationV1().Leases("kube-node-lease").Get(ctx, "worker-1", metav1.GetOptions{})
				if err != nil {
					return err
				}
				now := metav1.NowMicro()
				l.Spec.RenewTime = &now
				_, err = c.CoordinationV1().Leases("kube-node-lease").Update(ctx, l, metav1.UpdateOptions{})
				return err
			}, cp.As("system:node:worker-1", "system:nodes")},
			{"a pod is created in kube-system", func(ctx context.Context, c kubernetes.Interface) error {
				_, err := c.CoreV1().Pods("kube-system").Create(ctx, pod("dns"), metav1.CreateOptions{})
				return err
			}, controller},
			{"the registry in the release namespace can be fixed", func(ctx context.Context, c kubernetes.Interface) error {
				cm, err := c.CoreV1().ConfigMaps(releaseNamespace).Get(ctx, release+"-registry", metav1.GetOptions{})
				if err != nil {
					return err
				}
				cm.Annotations = map[string]string{"example.com/fixed": "yes"}
				_, err = c.CoreV1().ConfigMaps(releaseNamespace).Update(ctx, cm, metav1.UpdateOptions{})
				return err
			}, admin},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) { wantAllowed(t, tt.do(t.Context(), tt.as)) })
		}
		_, err := cp.As("alice").CoreV1().Namespaces().Create(ctx, namespace("oil-while-dead", nil), metav1.CreateOptions{})
		wantFailedClosed(t, err)
		_, err = cp.As("alice").CoreV1().Pods("oil-chart").Create(ctx, pod("web"), metav1.CreateOptions{})
		wantFailedClosed(t, err)
	})
}

// wantFailedClosed fails unless err is the API server failing to call the webhook.
func wantFailedClosed(t *testing.T, err error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Errorf("got %v; want the request refused because the webhook is unreachable", err)
	}
}

// exampleRegistry are the values of the shared example registry.
func exampleRegistry() []string {
	return []string{"--set-file", "registry.document=" + filepath.Join(live.Root(), "examples", "registry.yaml")}
}

// helmTemplate renders the chart as the README installs it, with args.
func helmTemplate(t *testing.T, args ...string) string {
	t.Helper()
	bin := filepath.Join(live.Root(), "bin", "helm")
	args = append([]string{"template", release, filepath.Join(live.Root(), "charts", "tenantguard"), "-n", releaseNamespace}, args...)
	out, err := exec.CommandContext(t.Context(), bin, args...).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("helm template: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("helm template: %v (run `make tools`)", err)
	}
	return string(out)
}

// runChartServer runs the rendered Deployment's command, as a process of the
// binary built from this tree with the ServiceAccount's identity, listening
// on port; the certificate also names 127.0.0.1, the host of the webhook URL.
func runChartServer(t *testing.T, cp *live.ControlPlane, rendered string, port int) (stop func(), logs *fixtures.SyncBuffer) {
	t.Helper()
	var d appsv1.Deployment
	renderedObject(t, rendered, "Deployment", release, &d)
	dir := t.TempDir()
	bin, err := live.Binary(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := cp.UserKubeconfig(serviceAccount)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigFile := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigFile, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	metricsPort, err := live.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args := append(slices.Clone(d.Spec.Template.Spec.Containers[0].Args),
		fmt.Sprintf("--addr=127.0.0.1:%d", port), fmt.Sprintf("--metrics-addr=127.0.0.1:%d", metricsPort),
		"--kubeconfig="+kubeconfigFile, "--tls-dns-name=127.0.0.1", "--shutdown-delay=0s", "--webhook-check-interval=1s")
	cmd := exec.CommandContext(context.WithoutCancel(t.Context()), bin, args...)
	logs = &fixtures.SyncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("server logs:\n%s", logs.String())
		}
	})
	return stop, logs
}

// waitForChartServer waits until the server has written its Secret and
// answers /readyz over TLS trusting that Secret's CA bundle, which it returns.
func waitForChartServer(t *testing.T, cp *live.ControlPlane, url string, logs *fixtures.SyncBuffer) []byte {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var last error
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		secret, err := cp.Client.CoreV1().Secrets(releaseNamespace).Get(t.Context(), release+"-tls", metav1.GetOptions{})
		if err != nil {
			last = err
			continue
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(secret.Data["ca.crt"])
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
		resp, err := client.Get(url + "/readyz")
		if err != nil {
			last = err
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return secret.Data["ca.crt"]
		}
		last = fmt.Errorf("/readyz: %s", resp.Status)
	}
	t.Fatalf("the chart's server is not ready after a minute: %v\n%s", last, logs.String())
	return nil
}

// renderedObject decodes the rendered object of kind and name into into.
func renderedObject(t *testing.T, rendered, kind, name string, into any) {
	t.Helper()
	doc, ok := renderedDoc(rendered, kind, name)
	if !ok {
		t.Fatalf("no %s %s in the chart", kind, name)
	}
	if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
		t.Fatal(err)
	}
}

// renderedDoc is the document of the object of kind and name in the
// rendered chart, if there is one.
func renderedDoc(rendered, kind, name string) (string, bool) {
	for doc := range strings.SplitSeq(rendered, "\n---\n") {
		if strings.Contains(doc, "\nkind: "+kind+"\n") && strings.Contains(doc, "\n  name: "+name+"\n") {
			return doc, true
		}
	}
	return "", false
}

// runAs runs tenantguard with args as user (a client certificate: only what
// RBAC grants that user name) and returns its output.
func runAs(t *testing.T, cp *live.ControlPlane, user string, args ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	bin, err := live.Binary(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := cp.UserKubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(file, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), bin, append(slices.Clone(args), "--kubeconfig="+file)...).CombinedOutput()
	return string(out), err
}

// helmTestPasses runs the chart's helm test hook (webhook-check) as its
// ServiceAccount, with the chart's test RBAC.
func helmTestPasses(t *testing.T, cp *live.ControlPlane, rendered string) {
	t.Helper()
	var hook corev1.Pod
	renderedObject(t, rendered, "Pod", release+"-test", &hook)
	out, err := runAs(t, cp, "system:serviceaccount:"+releaseNamespace+":"+hook.Spec.ServiceAccountName, hook.Spec.Containers[0].Args...)
	if err != nil || !strings.Contains(out, "denied it with [namespace-ownership]") {
		t.Errorf("helm test (webhook-check): %v\n%s", err, out)
	}
}

// installedChart is the chart applied on a control plane of its own, its
// webhooks pointed at url: nothing listens on port until runChartServer.
type installedChart struct {
	cp            *live.ControlPlane
	rendered, url string
	port          int
	applied       []string
}

// installChart renders the chart with args and the webhook URL, and applies
// it with server-side apply, as helm does, into the release namespace.
func installChart(t *testing.T, args ...string) installedChart {
	t.Helper()
	cp, err := live.StartControlPlane(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	port, err := live.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	rendered := helmTemplate(t, append(slices.Clone(args), "--set", "webhook.url="+url)...)
	if _, err := cp.Client.CoreV1().Namespaces().Create(t.Context(), namespace(releaseNamespace, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	force := true
	applied, err := cp.Apply(t.Context(), rendered, metav1.PatchOptions{FieldManager: "helm", Force: &force})
	if err != nil {
		t.Fatalf("the API server refused the chart: %v", err)
	}
	return installedChart{cp: cp, rendered: rendered, url: url, port: port, applied: applied}
}
