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

// force is server-side apply's force: the injector takes the caBundle fields
// over from whoever set them, and owns nothing else, so that the installer's
// fields stay theirs.
var force = true

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
		var stale []string
		apply := make([]map[string]any, 0, len(webhooks))
		for _, w := range webhooks {
			webhook, _ := w.(map[string]any)
			webhookName, _, _ := unstructured.NestedString(webhook, "name")
			have, _, _ := unstructured.NestedString(webhook, "clientConfig", "caBundle")
			if decoded, err := base64.StdEncoding.DecodeString(have); err != nil || !bytes.Equal(decoded, want) {
				stale = append(stale, webhookName)
			}
			apply = append(apply, map[string]any{"name": webhookName, "clientConfig": map[string]any{"caBundle": want}})
		}
		if len(stale) == 0 {
			continue
		}
		body, err := json.Marshal(map[string]any{
			"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind,
			"metadata": map[string]any{"name": name}, "webhooks": apply,
		})
		if err != nil {
			return false, err
		}
		if _, err := client.Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "tenantguard-ca-injector", Force: &force}); err != nil {
			return false, fmt.Errorf("writing the CA bundle of %s %s: %w", gvk.Kind, name, err)
		}
		r.opts.Logger.Info("CA bundle written", "kind", gvk.Kind, "name", name, "webhooks", stale)
	}
	return pending, nil
}
