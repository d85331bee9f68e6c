package certrotate_test

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/webhook/certrotate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestAnInstallersApplyMayDropAWebhookTheBundleWasWrittenInto: an
// installer that applies the webhook configuration server-side (helm
// upgrade) and drops a webhook from it, after the rotator wrote the CA bundle
// into every webhook, removes that webhook; the one it keeps keeps its
// bundle. Were the rotator an applier of each webhook entry, the dropped
// entry would stay with a name and a bundle, and the API server would refuse
// the installer's apply as invalid.
func TestAnInstallersApplyMayDropAWebhookTheBundleWasWrittenInto(t *testing.T) {
	ctx := t.Context()
	const ns, name = "install", "install-test"
	cp := controlPlane(t, ns)
	api := cp.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	install := func(webhooks ...string) error {
		var hooks []map[string]any
		for _, w := range webhooks {
			hooks = append(hooks, map[string]any{
				"name": w, "clientConfig": map[string]any{"url": "https://" + w + "/validate"},
				"rules":                   []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"configmaps"}}},
				"sideEffects":             "None",
				"admissionReviewVersions": []any{"v1"},
				"failurePolicy":           "Ignore",
				"namespaceSelector":       map[string]any{"matchLabels": map[string]any{"selects": "nothing"}},
			})
		}
		body, err := json.Marshal(map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": map[string]any{"name": name}, "webhooks": hooks})
		if err != nil {
			return err
		}
		_, err = api.Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "helm"})
		return err
	}
	if err := install("a.install.test", "b.install.test"); err != nil {
		t.Fatal(err)
	}
	rot, err := certrotate.New(cp.Admin, certrotate.Options{
		Namespace: ns, Name: "webhook-tls", Hosts: []string{"127.0.0.1"}, WebhookConfiguration: name,
		CheckInterval: 250 * time.Millisecond,
		Logger:        slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rot.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Webhooks[0].ClientConfig.CABundle) > 0 && len(got.Webhooks[1].ClientConfig.CABundle) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the CA bundle was not written into both webhooks")
		}
	}

	if err := install("a.install.test"); err != nil {
		t.Fatalf("the installer's apply without b: %v", err)
	}
	got, err := api.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Webhooks) != 1 || got.Webhooks[0].Name != "a.install.test" || len(got.Webhooks[0].ClientConfig.CABundle) == 0 || got.Webhooks[0].ClientConfig.URL == nil {
		t.Errorf("webhooks after the apply: %+v", got.Webhooks)
	}
}
