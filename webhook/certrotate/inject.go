package certrotate

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// webhookConfigurations are the two kinds whose caBundles are kept.
var webhookConfigurations = []schema.GroupVersionKind{
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"},
}

// resources are their resource names.
var resources = map[string]string{
	"ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
	"MutatingWebhookConfiguration":   "mutatingwebhookconfigurations",
}

// inject writes bundle into the caBundle of every webhook of both webhook
// configurations where it differs, keeping the unexpired CAs already there
// after it: a replica that read the Secret before another renewed it never
// takes out a CA that signs what the other serves, and a Secret recreated
// from scratch does not strand the replicas still serving the old
// certificate. A configuration that does not exist (yet) is reported as
// pending.
func (r *Rotator) inject(ctx context.Context, bundle []byte) (pending bool, err error) {
	name := r.opts.WebhookConfiguration
	if name == "" {
		return false, nil
	}
	for _, gvk := range webhookConfigurations {
		client := r.dynamic.Resource(gvk.GroupVersion().WithResource(resources[gvk.Kind]))
		current, err := client.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			pending = true
			continue
		}
		if err != nil {
			return false, fmt.Errorf("reading %s %s: %w", gvk.Kind, name, err)
		}
		webhooks, _, err := unstructured.NestedSlice(current.Object, "webhooks")
		if err != nil {
			return false, fmt.Errorf("reading %s %s: %w", gvk.Kind, name, err)
		}
		var existing [][]byte
		for _, w := range webhooks {
			webhook, _ := w.(map[string]any)
			have, _, _ := unstructured.NestedString(webhook, "clientConfig", "caBundle")
			if decoded, err := base64.StdEncoding.DecodeString(have); err == nil {
				existing = append(existing, decoded)
			}
		}
		want := merge(time.Now(), append([][]byte{bundle}, existing...)...)
		// A JSON patch of the stale caBundles, each after a test of its
		// webhook's name at that index: not server-side apply, which would
		// make the injector an owner of every webhook entry, so that an
		// installer's apply that drops a webhook (helm upgrade under
		// server-side apply) would keep an entry of a name and a caBundle,
		// which the API server refuses as invalid.
		var stale []string
		var ops []map[string]any
		for i, w := range webhooks {
			webhook, _ := w.(map[string]any)
			webhookName, _, _ := unstructured.NestedString(webhook, "name")
			have, _, _ := unstructured.NestedString(webhook, "clientConfig", "caBundle")
			if decoded, err := base64.StdEncoding.DecodeString(have); err == nil && bytes.Equal(decoded, want) {
				continue
			}
			stale = append(stale, webhookName)
			ops = append(ops,
				map[string]any{"op": "test", "path": fmt.Sprintf("/webhooks/%d/name", i), "value": webhookName},
				map[string]any{"op": "add", "path": fmt.Sprintf("/webhooks/%d/clientConfig/caBundle", i), "value": want})
		}
		if len(stale) == 0 {
			continue
		}
		body, err := json.Marshal(ops)
		if err != nil {
			return false, err
		}
		if _, err := client.Patch(ctx, name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: "tenantguard-ca-injector"}); err != nil {
			return false, fmt.Errorf("writing the CA bundle of %s %s: %w", gvk.Kind, name, err)
		}
		r.opts.Logger.Info("CA bundle written", "kind", gvk.Kind, "name", name, "webhooks", stale)
	}
	return pending, nil
}
