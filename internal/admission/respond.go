package admission

import (
	"encoding/json"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Response builds an AdmissionReview response.
type Response struct {
	admissionv1.AdmissionResponse
}

// Allowed is a response admitting the request.
func Allowed(uid types.UID) *Response {
	return &Response{admissionv1.AdmissionResponse{UID: uid, Allowed: true}}
}

// Denied is a response refusing the request with every reason, one a line.
func Denied(uid types.UID, reasons []string) *Response {
	return &Response{admissionv1.AdmissionResponse{
		UID:     uid,
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusForbidden,
			Reason:  metav1.StatusReasonForbidden,
			Message: strings.Join(reasons, "\n"),
		},
	}}
}

// WithPatch adds a JSON patch (RFC 6902) when it has operations.
func (r *Response) WithPatch(patch []byte) *Response {
	if len(patch) > 0 && string(patch) != "[]" && string(patch) != "null" {
		pt := admissionv1.PatchTypeJSONPatch
		r.PatchType = &pt
		r.Patch = patch
	}
	return r
}

// WithWarnings adds warnings that kubectl shows to the requester.
func (r *Response) WithWarnings(warnings []string) *Response {
	r.Warnings = append(r.Warnings, warnings...)
	return r
}

// WithAuditAnnotations adds audit annotations (the API server prefixes their
// keys with the webhook name).
func (r *Response) WithAuditAnnotations(annotations map[string]string) *Response {
	if len(annotations) == 0 {
		return r
	}
	if r.AuditAnnotations == nil {
		r.AuditAnnotations = map[string]string{}
	}
	for k, v := range annotations {
		r.AuditAnnotations[k] = v
	}
	return r
}

// Review wraps the response in an AdmissionReview v1.
func (r *Response) Review() *admissionv1.AdmissionReview {
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: Version, Kind: Kind},
		Response: &r.AdmissionResponse,
	}
}

// JSON is the AdmissionReview as indented JSON.
func (r *Response) JSON() ([]byte, error) {
	return json.MarshalIndent(r.Review(), "", "  ")
}
