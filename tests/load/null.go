package load

import (
	"encoding/json"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
)

// NullWebhook is the ceiling: it decodes the AdmissionReview with the
// Kubernetes types and answers allowed, doing no work a webhook could skip.
func NullWebhook() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	})
}
