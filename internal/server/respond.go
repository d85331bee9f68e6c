package server

import (
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tenantguard/tenantguard/internal/admission"
)

// InternalRule is the rule id of requests refused because tenantguard could
// not decide them (fail closed).
const InternalRule = "internal"

// internalDenial refuses a request tenantguard could not decide.
func internalDenial(uid types.UID, err error) *admission.Response {
	return admission.Denied(uid, []string{fmt.Sprintf(
		"[%s] tenantguard could not decide this request and refuses it to stay safe: %v; retry, and if it persists ask your platform team to check the tenantguard logs",
		InternalRule, err)})
}

// answers are the buffers answers are encoded into, reused: the server
// copies an answer out before writeReview returns.
var answers = sync.Pool{New: func() any { return new([]byte) }}

// maxKeptAnswer is the largest buffer given back to answers, so that one
// answer with many long reasons does not stay allocated.
const maxKeptAnswer = 16 << 10

// writeReview writes an AdmissionReview answer.
func writeReview(w http.ResponseWriter, resp *admission.Response) {
	buf, _ := answers.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxKeptAnswer {
			answers.Put(buf)
		}
	}()
	body, err := resp.Encode((*buf)[:0])
	*buf = body
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encoding the answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// writeError writes a plain-text HTTP error, one line.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = fmt.Fprintln(w, msg)
}
