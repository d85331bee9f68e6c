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

// send posts one request and checks the answer: an AdmissionReview for the
// request's uid, with the expected decision when the target decides.
func (t *Target) send(req *scale.Request) error {
	resp, err := t.Client.Post(t.URL, "application/json", bytes.NewReader(req.Body))
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
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
