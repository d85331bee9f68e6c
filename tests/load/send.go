package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tenantguard/tenantguard/tests/scale"
)

// Target is a webhook under load.
type Target struct {
	// Name labels the figures ("tenantguard", "opa", "null").
	Name string
	// URL is where the AdmissionReviews are posted.
	URL string
	// Client sends them (keep-alive, trusting the target's certificate).
	Client *http.Client
	// Decides says the target's answers must match the corpus's: false for
	// the null webhook, which allows everything.
	Decides bool
	// CPU, when set, is the CPU time the target's process has used so far:
	// runs then report its CPU time per request.
	CPU func() (time.Duration, error)
}

// answer is the part of an AdmissionReview answer the harness checks.
type answer struct {
	Response *struct {
		UID     string `json:"uid"`
		Allowed bool   `json:"allowed"`
	} `json:"response"`
}

// errWrong is a well-formed answer with the wrong decision.
var errWrong = errors.New("wrong decision")

// exchange sends one request and times it: its latency runs from due,
// when the request was due to be sent, to the last byte of the answer. The
// answer is checked after the clock stops, because decoding it is the
// harness's work and not the target's. It returns what went wrong, if
// anything: the request, the answer or the decision.
func (t *Target) exchange(req *scale.Request, due time.Time) (time.Duration, error) {
	status, body, err := t.post(req)
	latency := time.Since(due)
	if err != nil {
		return latency, err
	}
	return latency, t.check(req, status, body)
}

// post posts one request and reads the whole answer.
func (t *Target) post(req *scale.Request) (int, []byte, error) {
	resp, err := t.Client.Post(t.URL, "application/json", bytes.NewReader(req.Body))
	if err != nil {
		return 0, nil, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, body, err
}

// check checks an answer: an AdmissionReview for the request's uid, with
// the expected decision when the target decides.
func (t *Target) check(req *scale.Request, status int, body []byte) error {
	if status != http.StatusOK {
		return fmt.Errorf("status %d: %.200s", status, body)
	}
	var a answer
	if err := json.Unmarshal(body, &a); err != nil || a.Response == nil || a.Response.UID != req.UID {
		return fmt.Errorf("not the AdmissionReview answer for %q: %.200s", req.UID, body)
	}
	if t.Decides && a.Response.Allowed != req.Allowed {
		return fmt.Errorf("%w: %s allowed=%t, want %t", errWrong, req.Kind, a.Response.Allowed, req.Allowed)
	}
	return nil
}
