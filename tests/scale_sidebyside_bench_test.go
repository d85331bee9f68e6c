package tests

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/open-policy-agent/frameworks/constraint/pkg/client/reviews"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/target"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/scale"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// sideBySideTenants are the registry sizes BenchmarkDecisionSideBySide
// measures at.
var sideBySideTenants = []int{10, 1000}

// BenchmarkDecisionSideBySide is one validating decision per op, from the
// AdmissionReview's JSON to the decision, by tenantguard's embedded engine
// and by Gatekeeper's engine (its constraint framework with the Rego
// driver and K8sValidationTarget, in-process) with the exported templates
// and constraints, on the same requests: the load harness's mixed corpus
// (pods, Deployments, claims, Services, namespace creates, refused pods) at
// 10 and 1,000 tenants, with 10 namespaces of 5 pods and their Ingress and
// HTTPRoute per tenant. Decoding the AdmissionReview is counted on both
// sides: tenantguard's admission.Decode, and for Gatekeeper the
// AdmissionReview's unmarshalling as its webhook does it (the framework then
// reads the object itself). Gatekeeper is handed the request's namespace as
// its webhook hands it (a lookup in a map here, its cache there) and its
// inventory holds what the exported SyncSet replicates. Each op checks the
// answer against the corpus's.
func BenchmarkDecisionSideBySide(b *testing.B) {
	for _, n := range sideBySideTenants {
		b.Run(fmt.Sprintf("tenants=%d", n), func(b *testing.B) {
			snap, err := registry.Parse("scale.yaml", scale.Registry(n))
			if err != nil {
				b.Fatal(err)
			}
			corpus := scale.Corpus(n, 200)
			b.Run("engine=embedded", func(b *testing.B) { benchEmbedded(b, snap, n, corpus) })
			b.Run("engine=gatekeeper", func(b *testing.B) { benchGatekeeper(b, snap, n, corpus) })
		})
	}
}

func benchEmbedded(b *testing.B, snap *registry.Snapshot, n int, corpus []scale.Request) {
	eng, err := engine.New(b.Context(), snap, engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	view := clusterview.New(snap.TenantLabel())
	scale.Fill(view, n, 10, 5)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c := corpus[i%len(corpus)]
		req, err := admission.Decode(c.Body)
		if err != nil {
			b.Fatal(err)
		}
		d, err := eng.Validate(b.Context(), req, view)
		if err != nil || d.Allowed != c.Allowed {
			b.Fatalf("%s: decision %+v, %v", c.Kind, d, err)
		}
		i++
	}
}

func benchGatekeeper(b *testing.B, snap *registry.Snapshot, n int, corpus []scale.Request) {
	lib, err := export.Gatekeeper(snap, export.Options{})
	if err != nil {
		b.Fatal(err)
	}
	client := gatekeeperClient(b, lib)
	synced := syncSetKinds(b, lib)
	namespaces := map[string]*corev1.Namespace{}
	scale.Objects(n, 10, 5, func(o clusterview.Object) {
		u := scaleObject(o)
		if o.Kind == "Namespace" {
			typed := &corev1.Namespace{}
			convert(b, u.Object, typed)
			namespaces[o.Name] = typed
		}
		if !synced[u.GroupVersionKind()] {
			return
		}
		if _, err := client.AddData(b.Context(), u); err != nil {
			b.Fatal(err)
		}
	})
	opts := []reviews.ReviewOpt{reviews.EnforcementPoint(webhookEnforcementPoint)}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c := corpus[i%len(corpus)]
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(c.Body, &review); err != nil {
			b.Fatal(err)
		}
		r := &target.AugmentedReview{AdmissionRequest: review.Request, IsAdmission: true}
		if ns, ok := namespaces[review.Request.Namespace]; ok {
			r.Namespace = ns
		}
		resp, err := client.Review(b.Context(), r, opts...)
		if err != nil {
			b.Fatal(err)
		}
		allowed := true
		for _, res := range resp.Results() {
			if res.EnforcementAction == "deny" {
				allowed = false
			}
		}
		if allowed != c.Allowed {
			b.Fatalf("%s: allowed %v, want %v: %v", c.Kind, allowed, c.Allowed, resp.Results())
		}
		i++
	}
}

// scaleObject is an object of the scale cluster as the API server would
// hand it to Gatekeeper's sync: its kind, name, labels, and the hosts of
// an Ingress or a route.
func scaleObject(o clusterview.Object) *unstructured.Unstructured {
	apiVersion := "v1"
	if o.Group != "" {
		apiVersion = o.Group + "/v1"
	}
	meta := map[string]any{"name": o.Name}
	if o.Namespace != "" {
		meta["namespace"] = o.Namespace
	}
	if len(o.Labels) > 0 {
		labels := map[string]any{}
		for k, v := range o.Labels {
			labels[k] = v
		}
		meta["labels"] = labels
	}
	obj := map[string]any{"apiVersion": apiVersion, "kind": o.Kind, "metadata": meta}
	switch {
	case o.PriorityClass != nil:
		obj["value"] = int64(o.PriorityClass.Value)
	case o.Kind == "Ingress":
		rules := make([]any, len(o.Hosts))
		for i, h := range o.Hosts {
			rules[i] = map[string]any{"host": h}
		}
		obj["spec"] = map[string]any{"rules": rules}
	case len(o.Hosts) > 0:
		hosts := make([]any, len(o.Hosts))
		for i, h := range o.Hosts {
			hosts[i] = h
		}
		obj["spec"] = map[string]any{"hostnames": hosts}
	case o.Kind == "Pod":
		obj["status"] = map[string]any{"phase": "Running"}
	}
	return &unstructured.Unstructured{Object: obj}
}
