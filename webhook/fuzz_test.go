package webhook

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/tenantguard/tenantguard/tests/fixtures"
)

// FuzzHandler sends arbitrary bodies to both webhooks: every answer is a 400
// or an AdmissionReview answering the request's uid, never a panic or a 5xx.
func FuzzHandler(f *testing.F) {
	seeds, err := fixtures.Reviews()
	if err != nil {
		f.Fatal(err)
	}
	for _, body := range seeds {
		f.Add(body)
	}
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","kind":{"kind":"Pod"},"resource":{"resource":"pods"},"operation":"CREATE","object":{"spec":{"containers":[{"securityContext":{"privileged":"yes"}}]}}}}`))
	// Bodies naming namespaces the view lacks are refused after the wait.
	srv, _ := newServer(f, newStore(f, filepath.Join(fixtures.Dir(), "registry.yaml"), nil), Options{NamespaceWait: time.Millisecond})
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{"/validate", "/mutate"} {
			status, out := post(t, srv.Handler(), path, "application/json", body)
			switch status {
			case http.StatusBadRequest:
			case http.StatusOK:
				var review admissionv1.AdmissionReview
				if err := json.Unmarshal(out, &review); err != nil || review.Response == nil || review.Response.UID == "" {
					t.Fatalf("%s: 200 with %q", path, out)
				}
			default:
				t.Fatalf("%s: status %d for %q", path, status, body)
			}
		}
	})
}
