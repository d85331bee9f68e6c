package admission

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Violation is one broken rule.
type Violation struct {
	ID  string `json:"id"`
	Msg string `json:"msg"`
}

// String is the violation as the requester reads it: "[rule-id] sentence".
func (v Violation) String() string { return "[" + v.ID + "] " + v.Msg }

// Decision is the answer to one request, as the rules gave it.
type Decision struct {
	Allowed bool
	// Deny, Warn and DryRun are the violations by enforcement mode.
	Deny, Warn, DryRun []Violation
	// Patch is the JSON patch of the mutations, nil when there are none.
	Patch []byte
}

// Response turns a decision into the AdmissionReview response: denials as the
// status message, warn-mode violations as warnings, dryrun ones as audit
// annotations (dryrun-RULE), and the mutation patch.
func (d *Decision) Response(uid types.UID) *Response {
	var resp *Response
	if d.Allowed {
		resp = Allowed(uid)
	} else {
		resp = Denied(uid, Messages(d.Deny))
	}
	annotations := map[string]string{}
	for _, v := range d.DryRun {
		annotations["dryrun-"+v.ID] = v.String()
	}
	return resp.WithPatch(d.Patch).WithWarnings(Messages(d.Warn)).WithAuditAnnotations(annotations)
}

// Messages are the violations as "[rule-id] sentence" lines, sorted.
func Messages(vs []Violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	sort.Strings(out)
	return out
}

// InternalRule is the rule id of requests refused because tenantguard could
// not decide them (fail closed).
const InternalRule = "internal"

// Internal refuses a request tenantguard could not decide.
func Internal(uid types.UID, err error) *Response {
	return Denied(uid, []string{fmt.Sprintf(
		"[%s] tenantguard could not decide this request and refuses it to stay safe: %v; retry, and if it persists ask your platform team to check the tenantguard logs",
		InternalRule, err)})
}

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

// answers are the buffers answers are encoded into, reused: the server
// copies an answer out before WriteReview returns.
var answers = sync.Pool{New: func() any { return new([]byte) }}

// maxKeptAnswer is the largest buffer given back to answers, so that one
// answer with many long reasons does not stay allocated.
const maxKeptAnswer = 16 << 10

// WriteReview writes an AdmissionReview answer over HTTP.
func WriteReview(w http.ResponseWriter, resp *Response) {
	buf, _ := answers.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxKeptAnswer {
			answers.Put(buf)
		}
	}()
	body, err := resp.Encode((*buf)[:0])
	*buf = body
	if err != nil {
		WriteError(w, http.StatusInternalServerError, "encoding the answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// WriteError writes a plain-text HTTP answer of one line: a request refused
// before it was decoded, or a probe's answer.
func WriteError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = fmt.Fprintln(w, msg)
}
