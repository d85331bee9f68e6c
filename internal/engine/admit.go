package engine

import (
	"context"
	"errors"
	"time"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// DefaultReservationTTL is how long an admitted create holds its place in its
// tenant's count before the informer sees the object: long enough for the
// API server to store it and the watch to deliver it, short enough that a
// create refused after admission (by another webhook) soon gives it back.
const DefaultReservationTTL = 30 * time.Second

// ErrStale is returned by Hold.Keep when the counts a create was decided
// against changed meanwhile (another replica admitted a create first): the
// create must be decided again.
var ErrStale = errors.New("the tenant's counts changed while deciding")

// Ledger holds the places of creates being decided in their tenants' counts.
type Ledger interface {
	// Reserve returns the counts of c.Key a create must be decided against,
	// by tenant, and the create's hold on its place.
	Reserve(ctx context.Context, c clusterview.Claim, tenants []string) (map[string]int, Hold, error)
}

// Hold is one create's place in its tenants' counts. Exactly one of Keep
// and Release is called once the create is decided.
type Hold interface {
	// Keep makes the place last until the object is seen: the create is
	// admitted. ErrStale means it must be decided again.
	Keep(ctx context.Context) error
	// Release gives the place back: the create is refused.
	Release()
}

// LocalLedger reserves in the view: exact within one replica, with no API
// call. Replicas do not see each other's reservations.
type LocalLedger struct {
	View *clusterview.View
	// TTL bounds how long an admitted create holds its place unseen;
	// DefaultReservationTTL when 0.
	TTL time.Duration
}

// Reserve implements Ledger.
func (l LocalLedger) Reserve(_ context.Context, c clusterview.Claim, tenants []string) (map[string]int, Hold, error) {
	ttl := l.TTL
	if ttl <= 0 {
		ttl = DefaultReservationTTL
	}
	counts, r := l.View.Reserve(c, tenants, ttl)
	return counts, localHold{r}, nil
}

type localHold struct{ r *clusterview.Reservation }

func (h localHold) Keep(context.Context) error {
	h.r.Keep()
	return nil
}

func (h localHold) Release() { h.r.Release() }

// Admit answers the validating webhook like Validate, and keeps tenant-wide
// counts from being overshot by parallel creates: a create that counts
// against a quota reserves its place in the ledger before it is decided, so
// that of a burst of creates each is decided against the ones before it.
// The place is kept when the create is admitted and given back when it is
// refused. Dry-run requests store nothing and reserve nothing.
func (e *Engine) Admit(ctx context.Context, req *admission.Request, view *clusterview.View, ledger Ledger) (*admission.Decision, error) {
	key, tenants := e.counted(req, view)
	if key == "" || len(tenants) == 0 || (req.DryRun != nil && *req.DryRun) {
		return e.Validate(ctx, req, view)
	}
	name := req.Name
	if name == "" {
		// Not named yet (API servers name objects before validating
		// admission): the uid keeps it apart from every other create, and
		// its hold lasts until it expires.
		name = "uid:" + string(req.UID)
	}
	claim := clusterview.Claim{Key: key, Namespace: req.Namespace, Name: name}
	if key == clusterview.NamespacesKey {
		// The API server sends a Namespace's own name as its namespace;
		// the view knows namespaces by name alone.
		claim.Namespace = ""
	}
	for {
		d, err := e.admitOnce(ctx, req, view, ledger, claim, quota{key: key, tenants: tenants})
		if !errors.Is(err, ErrStale) {
			return d, err
		}
		if ctx.Err() != nil {
			return nil, err
		}
	}
}

// admitOnce reserves, decides, and keeps or releases the place.
func (e *Engine) admitOnce(ctx context.Context, req *admission.Request, view *clusterview.View, ledger Ledger, claim clusterview.Claim, q quota) (d *admission.Decision, err error) {
	counts, hold, err := ledger.Reserve(ctx, claim, q.tenants)
	if err != nil {
		return nil, err
	}
	admitted := false
	defer func() {
		if !admitted {
			hold.Release()
		}
	}()
	q.counts = counts
	if d, err = e.validate(ctx, req, view, &q); err != nil || !d.Allowed {
		return d, err
	}
	if err := hold.Keep(ctx); err != nil {
		return nil, err
	}
	admitted = true
	return d, nil
}
