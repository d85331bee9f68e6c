package engine

import (
	"context"
	"errors"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// Admit answers the validating webhook like Validate, and keeps tenant-wide
// counts from being overshot by parallel creates: a create that counts
// against a quota reserves its place in the ledger before it is decided, so
// that of a burst of creates each is decided against the ones before it.
// The place is kept when the create is admitted and given back when it is
// refused; a create whose counts changed meanwhile (quota.ErrStale) is
// decided again. Dry-run requests store nothing and reserve nothing. The
// package quota tells the whole mechanism.
func (e *Engine) Admit(ctx context.Context, req *admission.Request, view *clusterview.View, ledger quota.Ledger) (*admission.Decision, error) {
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
	claim := quota.Claim{Key: key, Namespace: req.Namespace, Name: name}
	if key == clusterview.NamespacesKey {
		// The API server sends a Namespace's own name as its namespace;
		// the view knows namespaces by name alone.
		claim.Namespace = ""
	}
	for {
		d, err := e.admitOnce(ctx, req, view, ledger, claim, counting{key: key, tenants: tenants})
		if !errors.Is(err, quota.ErrStale) {
			return d, err
		}
		if ctx.Err() != nil {
			return nil, err
		}
	}
}

// admitOnce reserves, decides, and keeps or releases the place.
func (e *Engine) admitOnce(ctx context.Context, req *admission.Request, view *clusterview.View, ledger quota.Ledger, claim quota.Claim, q counting) (d *admission.Decision, err error) {
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
