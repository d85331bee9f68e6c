package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/tests/live"
	"github.com/tenantguard/tenantguard/webhook/selfsigned"
)

// TestOnlyTheAPIServerIsAnswered runs the server with --client-ca-file and
// a kube-apiserver that presents a client certificate to webhooks through
// its AdmissionConfiguration, as docs/webhook.md describes: tenant requests
// through the API server are decided, and a caller without the certificate
// (anything else that reaches the port) is refused before any decision.
func TestOnlyTheAPIServerIsAnswered(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	callers, err := selfsigned.NewCA("webhook-callers")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := callers.Client("kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"callers.crt": callers.PEM, "client.crt": certPEM, "client.key": keyPEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig := fmt.Sprintf("apiVersion: v1\nkind: Config\nusers:\n- name: \"*\"\n  user:\n    client-certificate: %s\n    client-key: %s\n",
		filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key"))
	admission := "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"
	for _, plugin := range []string{"ValidatingAdmissionWebhook", "MutatingAdmissionWebhook"} {
		admission += fmt.Sprintf("- name: %s\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: %s\n", plugin, filepath.Join(dir, "webhooks.kubeconfig"))
	}
	for name, data := range map[string]string{"webhooks.kubeconfig": kubeconfig, "admission.yaml": admission} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := live.Start(ctx, live.Options{
		APIServerArgs: map[string]string{"admission-control-config-file": filepath.Join(dir, "admission.yaml")},
		ServeArgs:     []string{"--client-ca-file", filepath.Join(dir, "callers.crt")},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()

	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, namespace("oil-dev", map[string]string{tenantLabel: "oil"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alice := c.As("alice")
	t.Run("tenant requests through the API server are decided", func(t *testing.T) {
		eventually(t, "the hostNetwork pod refused", func(ctx context.Context) error {
			_, err := alice.CoreV1().Pods("oil-dev").Create(ctx, pod("host", func(s *corev1.PodSpec) { s.HostNetwork = true }), dryRun)
			return denialOf(err, "host-network")
		})
		_, err := alice.CoreV1().Pods("oil-dev").Create(ctx, pod("plain", asking("100m")), dryRun) // oil sums CPU and memory: a pod names them
		wantAllowed(t, err)
	})
	t.Run("a caller without the API server's certificate is refused", func(t *testing.T) {
		bodies, err := fixtures.Reviews()
		if err != nil {
			t.Fatal(err)
		}
		body := bodies[0]
		for _, path := range []string{"/validate", "/mutate"} {
			resp, err := c.HTTP.Post(c.BaseURL+path, "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s: %d, want 401", path, resp.StatusCode)
			}
		}
	})
}
