package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/metrics"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// The two webhooks.
const (
	Validate = "validate"
	Mutate   = "mutate"
)

const (
	// DefaultMaxBodyBytes bounds an AdmissionReview: the API server refuses
	// objects over 3 MiB, and an UPDATE carries two of them.
	DefaultMaxBodyBytes = 7 << 20
	// defaultTimeout applies when the API server sends no ?timeout=.
	defaultTimeout = 10 * time.Second
	// maxTimeout caps the API server's ?timeout= (it allows 30 s at most).
	maxTimeout = 30 * time.Second
)

// handler answers one webhook: decode, decide, respond.
type handler struct {
	webhook string
	store   *state.Store
	ledger  quota.Ledger
	// namespaceWait is how long a request in a namespace the view has not
	// seen yet waits for the informer before it is refused.
	namespaceWait time.Duration
	metrics       *metrics.Metrics
	log           *slog.Logger
	maxBody       int64
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// Counted while answered, so that the audit waits for none left.
	h.store.AdmitStart()
	defer h.store.AdmitEnd()
	req, status, err := h.decode(w, r)
	if err != nil {
		h.metrics.Request(h.webhook, metrics.DecisionBadRequest, time.Since(start))
		h.log.Warn("bad request", "webhook", h.webhook, "remote", r.RemoteAddr, "status", status, "error", err.Error())
		admission.WriteError(w, status, err.Error())
		return
	}
	// The API server's timeout counts from the request's arrival, reading
	// and decoding the body included, less a margin (decisionBudget).
	ctx := withDeadline(r.Context(), start.Add(decisionBudget(requestTimeout(r))))
	defer ctx.release()
	resp, outcome := h.decide(ctx, req)
	admission.WriteReview(w, resp)
	h.metrics.Request(h.webhook, outcome, time.Since(start))
}

// decode reads and checks the AdmissionReview; errors carry the HTTP status.
func (h *handler) decode(w http.ResponseWriter, r *http.Request) (*admission.Request, int, error) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return nil, http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed: POST an AdmissionReview", r.Method)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" { // what the API server sends
		mediaType, _, err := mime.ParseMediaType(ct)
		if err != nil || mediaType != "application/json" {
			return nil, http.StatusBadRequest, fmt.Errorf("content type %q is not application/json", ct)
		}
	}
	body, err := readBody(http.MaxBytesReader(w, r.Body, h.maxBody), r.ContentLength, h.maxBody)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, http.StatusBadRequest, fmt.Errorf("the body is over the %d byte limit", h.maxBody)
		}
		return nil, http.StatusBadRequest, fmt.Errorf("reading the body: %w", err)
	}
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] != '{' {
		return nil, http.StatusBadRequest, errors.New("the body is not a JSON object")
	}
	req, err := admission.Decode(body)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	return req, 0, nil
}

// presizeMax is the largest announced body read into one allocation made
// before any byte arrives: a client announcing the limit and sending slowly
// must not cost the limit at once.
const presizeMax = 64 << 10

// readBody reads a request's body: in one allocation when its length is
// announced and small (the API server announces it), else as it comes.
// body is limited to limit bytes already.
func readBody(body io.Reader, length, limit int64) ([]byte, error) {
	if length <= 0 || length > min(limit, presizeMax) {
		return io.ReadAll(body)
	}
	buf := make([]byte, length)
	if _, err := io.ReadFull(body, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// decisionBudget is how long a request with the API server's timeout t
// may take here: t less a tenth of it, at most half a second. The API
// server's clock started before this one (the connection, the request's
// headers); an answer it no longer waits for would leave the holds of an
// admission it never made (a create's place in its tenant's count) until
// they expire, where a refusal in time gives them back.
func decisionBudget(t time.Duration) time.Duration {
	return t - min(t/10, 500*time.Millisecond)
}

// requestTimeout is the API server's ?timeout= for this call, capped.
func requestTimeout(r *http.Request) time.Duration {
	d, err := time.ParseDuration(queryValue(r.URL.RawQuery, "timeout"))
	if err != nil || d <= 0 {
		return defaultTimeout
	}
	return min(d, maxTimeout)
}

// queryValue is the first value of key in a raw query, as
// url.Values.Get(key) of url.ParseQuery's result, without building the map
// of every parameter: "" when absent or badly escaped. Unlike ParseQuery it
// reads a query of more than its 10,000 parameters too.
func queryValue(raw, key string) string {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if strings.Contains(pair, ";") {
			continue // url.ParseQuery skips such a pair
		}
		k, v, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(k, "%+") {
			var err error
			if k, err = url.QueryUnescape(k); err != nil {
				continue
			}
		}
		if k != key {
			continue
		}
		if !strings.ContainsAny(v, "%+") {
			return v
		}
		if v, err := url.QueryUnescape(v); err == nil {
			return v
		}
	}
	return ""
}

// decide answers a decoded request and names its outcome. Errors and panics
// in evaluation refuse the request with an [internal] reason.
func (h *handler) decide(ctx context.Context, req *admission.Request) (resp *admission.Response, outcome string) {
	defer func() {
		if p := recover(); p != nil {
			h.log.Error("panic while deciding", "webhook", h.webhook, "uid", req.UID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			resp, outcome = h.internal(req, fmt.Errorf("internal error"))
		}
	}()
	e := h.store.Engine()
	if e == nil {
		return h.internal(req, errors.New("no tenant registry is loaded yet"))
	}
	view := h.store.View()
	// The API server sets a Namespace request's namespace to its own name:
	// only objects in a namespace wait for it.
	inNamespace := req.Namespace != "" && (req.Kind.Group != "" || req.Kind.Kind != "Namespace")
	if inNamespace && !h.namespaceSeen(ctx, view, req.Namespace) {
		// Deciding without the namespace's labels would not know its
		// tenant, and would let through what the tenant's rules refuse;
		// mutating without them would set none of its defaults (node
		// pool, RuntimeClass), which no validating rule requires.
		return h.internal(req, fmt.Errorf("namespace %q is not in tenantguard's view of the cluster yet; retry in a moment", req.Namespace))
	}
	if h.webhook == Mutate {
		patch, err := e.Mutate(ctx, req, view)
		if err != nil {
			return h.internal(req, err)
		}
		return admission.Allowed(req.UID).WithPatch(patch), metrics.DecisionAllowed
	}
	d, err := e.Admit(ctx, req, view, h.ledger)
	if err != nil {
		return h.internal(req, err)
	}
	if len(d.Deny)+len(d.Warn)+len(d.DryRun) > 0 {
		h.record(req, d, e.Tenant(req, view))
	}
	if !d.Allowed {
		return d.Response(req.UID), metrics.DecisionDenied
	}
	return d.Response(req.UID), metrics.DecisionAllowed
}

// namespaceSeen waits a little for a namespace the view has not seen.
func (h *handler) namespaceSeen(ctx context.Context, view *clusterview.View, name string) bool {
	if _, ok := view.NamespaceLabels(name); ok {
		return true // the usual case: no timer
	}
	ctx, cancel := context.WithTimeout(ctx, h.namespaceWait)
	defer cancel()
	return view.WaitNamespace(ctx, name)
}

func (h *handler) internal(req *admission.Request, err error) (*admission.Response, string) {
	h.metrics.Violation(admission.InternalRule, "deny", "")
	h.log.Error("evaluation failed, request refused", "webhook", h.webhook, "uid", req.UID, "error", err.Error())
	return admission.Internal(req.UID, err), metrics.DecisionError
}

// record counts the violations of a request that broke any rule and logs
// one line for it: its tenant, who, what, and the rule ids by mode.
func (h *handler) record(req *admission.Request, d *admission.Decision, tenant string) {
	modes := []struct {
		name string
		vs   []admission.Violation
	}{{"deny", d.Deny}, {"warn", d.Warn}, {"dryrun", d.DryRun}}
	attrs := []any{
		"user", req.UserInfo.Username,
		"operation", string(req.Operation),
		"kind", req.Kind.Kind,
		"group", req.Kind.Group,
		"namespace", req.Namespace,
		"name", req.Name,
		"uid", string(req.UID),
		"tenant", tenant,
	}
	for _, mode := range modes {
		if len(mode.vs) == 0 {
			continue
		}
		ids := make([]string, len(mode.vs))
		for i, v := range mode.vs {
			ids[i] = v.ID
			h.metrics.Violation(v.ID, mode.name, tenant)
		}
		attrs = append(attrs, mode.name, ids)
	}
	msg := "allowed with violations"
	if !d.Allowed {
		msg = "denied"
	}
	h.log.Info(msg, attrs...)
}
