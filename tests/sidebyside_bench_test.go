package tests

import (
	"path/filepath"
	"testing"

	"github.com/open-policy-agent/frameworks/constraint/pkg/client/reviews"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/target"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// BenchmarkDecisionCorpusSideBySide is one validating decision per op,
// cycling through the corpus cases of the main registry (the request as
// mutated, decoded beforehand), by the embedded engine (with each
// evaluator), by Gatekeeper's engine with the exported templates
// (constraint framework, in-process), and by the exported CEL policies in
// the API server's validator. Every engine sees the corpus cluster
// (cluster.yaml) only, loaded once. The corpus exercises every rule
// family; BenchmarkDecisionSideBySide measures at scale.
func BenchmarkDecisionCorpusSideBySide(b *testing.B) {
	corpus := benchCorpus(b)
	b.Logf("%d corpus cases", len(corpus))
	file := filepath.Join(fixtures.Dir(), "registry.yaml")
	snap, err := registry.Load(file)
	if err != nil {
		b.Fatal(err)
	}

	// engine=embedded is the default evaluator (OPA's plan of the rules);
	// engine=embedded-topdown is OPA's topdown evaluator on the same rules.
	for _, embedded := range []struct{ name, evaluator string }{
		{"engine=embedded", engine.EvaluatorAuto},
		{"engine=embedded-topdown", engine.EvaluatorTopdown},
	} {
		b.Run(embedded.name, func(b *testing.B) {
			eng, err := engine.New(b.Context(), snap, engine.Options{PolicyOptions: engine.PolicyOptions{Evaluator: embedded.evaluator}})
			if err != nil {
				b.Fatal(err)
			}
			cluster, err := clusterview.LoadFile(fixtures.ClusterFile())
			if err != nil {
				b.Fatal(err)
			}
			view := clusterview.New(snap.TenantLabel())
			for _, o := range cluster {
				view.Upsert(o)
			}
			requests := make([]*admission.Request, len(corpus))
			for i, c := range corpus {
				if requests[i], err = admission.Decode(c.review); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := eng.Validate(b.Context(), requests[i%len(requests)], view); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}

	b.Run("engine=gatekeeper", func(b *testing.B) {
		lib, err := export.Gatekeeper(snap, export.Options{})
		if err != nil {
			b.Fatal(err)
		}
		client := gatekeeperClient(b, lib)
		synced := syncSetKinds(b, lib)
		for _, o := range clusterItems(b) {
			u := &unstructured.Unstructured{Object: o}
			if synced[u.GroupVersionKind()] {
				if _, err := client.AddData(b.Context(), u); err != nil {
					b.Fatal(err)
				}
			}
		}
		type review struct {
			r    *target.AugmentedReview
			opts []reviews.ReviewOpt
		}
		inputs := make([]review, len(corpus))
		for i, c := range corpus {
			inputs[i] = review{r: &target.AugmentedReview{AdmissionRequest: c.request, IsAdmission: true}, opts: []reviews.ReviewOpt{reviews.EnforcementPoint(webhookEnforcementPoint)}}
			if ns := c.namespaceObject(); ns != nil {
				typed := &corev1.Namespace{}
				convert(b, ns, typed)
				inputs[i].r.Namespace = typed
				inputs[i].opts = append(inputs[i].opts, reviews.Namespace(ns))
			}
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			in := inputs[i%len(inputs)]
			if _, err := client.Review(b.Context(), in.r, in.opts...); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})

	b.Run("engine=cel", func(b *testing.B) {
		j := kyvernoJudgeOffline()
		bt := b
		j.load(bt, file)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			j.decide(bt, corpus[i%len(corpus)])
			i++
		}
	})
}

// benchCorpus is the decidable corpus of the main registry, as mutated,
// without the DELETE no admission policy can take.
func benchCorpus(b *testing.B) []*corpusCase {
	b.Helper()
	all := loadCorpus(b)
	var out []*corpusCase
	for _, c := range all {
		if filepath.Base(c.RegistryFile()) == "registry.yaml" && refusesDeleteWithoutOld(c) == "" {
			out = append(out, c)
		}
	}
	return out
}
