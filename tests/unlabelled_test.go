package tests

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// TestExportsAskForTheLabelTheWebhookAdds sends the namespace creates that
// tenantguard's mutating webhook labels, unlabelled, to the engines that do
// not mutate: each must refuse them under namespace-ownership, asking for
// the label, rather than admit a tenant namespace no workload rule sees.
func TestExportsAskForTheLabelTheWebhookAdds(t *testing.T) {
	corpus := loadCorpus(t)
	var labelled []*corpusCase
	for _, c := range corpus {
		if c.request.Kind.Kind == "Namespace" && c.request.Operation == "CREATE" && strings.Contains(string(c.patch), "/metadata/labels") {
			labelled = append(labelled, c)
		}
	}
	if len(labelled) < 3 {
		t.Fatalf("only %d corpus cases get the tenant label from the webhook", len(labelled))
	}
	for _, j := range []judge{gatekeeperJudge(nil), kyvernoJudgeOffline()} {
		t.Run(j.name, func(t *testing.T) {
			loaded := ""
			for _, c := range labelled {
				if c.RegistryFile() != loaded {
					j.load(t, c.RegistryFile())
					loaded = c.RegistryFile()
				}
				t.Run(c.Name, func(t *testing.T) {
					var review admissionv1.AdmissionReview
					if err := json.Unmarshal(c.original, &review); err != nil {
						t.Fatal(err)
					}
					unlabelled := *c
					unlabelled.request = review.Request
					got, _ := j.decide(t, &unlabelled)
					if !slices.Contains(got.Deny, "namespace-ownership") {
						t.Errorf("%s admitted the unlabelled tenant namespace: %s", j.name, got)
					}
				})
			}
		})
	}
}
