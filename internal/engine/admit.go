package engine

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/usage"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// Admit answers the validating webhook like Validate, and keeps parallel
// requests from overshooting what only one of them may have:
//
//   - tenant-wide counts: a create that counts against a quota reserves its
//     place in the ledger before it is decided, so that of a burst of
//     creates each is decided against the ones before it. The place is kept
//     when the create is admitted and given back when it is refused; a
//     create whose counts changed meanwhile (quota.ErrStale) is decided
//     again. The package quota tells the whole mechanism.
//
//   - hosts: a create or update of an Ingress or route holds the hosts it
//     serves in the view's host index the same way (clusterview.View
//     ReserveHosts), so that of parallel requests for one host each sees
//     the ones before it as the host's holders. The holds are the
//     replica's own, as the quota's in local mode; with the strict ledger
//     (quota.StrictLedger.ReserveHosts) the requests admitted by the other
//     replicas and not seen yet are holders too, and a request whose
//     ledger of hosts changed meanwhile is decided again.
//
//   - tenant-wide sums of resources: a pod or claim created, a pod resized
//     or a claim expanded holds what it adds to its tenant's sums
//     (clusterview.View.ReserveUsage, or the strict ledger's
//     ReserveUsage) the same way, so that a burst of pods never takes more
//     than the quota's room.
//
// The holds are kept in that order, hosts, resources, then counts, once the
// request is admitted; one that finds the ledger changed meanwhile
// (quota.ErrStale) has the request decided again from the start. A request
// refused in the end after some of its holds were kept withdraws them once
// answered (quota.HoldWithdrawer): its hosts and what it would have added
// stop counting then, not when the strict ledger's entries expire.
//
// Dry-run requests store nothing and reserve nothing.
func (e *Engine) Admit(ctx context.Context, req *admission.Request, view *clusterview.View, ledger quota.Ledger) (*admission.Decision, error) {
	if req.DryRun != nil && *req.DryRun {
		return e.Validate(ctx, req, view)
	}
	hosts, resources := e.served(req, view), e.resourced(req, view)
	// The holds name the object's uid: the strict ledger writes it with its
	// entry, the local one tells the view's events of another object of
	// the name (one being deleted) from the held object's. A request that
	// serves no host, adds to no sum and creates nothing takes no hold.
	if hosts != nil || resources != nil || creating(req) {
		ctx = quota.WithObjectUID(ctx, text(objectAt(req.Object, "metadata"), "uid"))
	}
	// kept collects the holds kept, for a ledger that withdraws them; nil,
	// nothing is collected.
	var kept *[]quota.Hold
	withdrawer, _ := ledger.(quota.HoldWithdrawer)
	if withdrawer != nil {
		kept = new([]quota.Hold)
	}
	for {
		h := &held{hosts: hosts, resources: resources, resourcesKnown: true, kept: kept}
		var d *admission.Decision
		var err error
		if hosts == nil {
			d, err = e.admitResources(ctx, req, view, ledger, h)
		} else {
			d, err = e.admitHosts(ctx, req, view, ledger, h)
		}
		if errors.Is(err, quota.ErrStale) && ctx.Err() == nil {
			continue
		}
		// Refused: the holds kept meanwhile are taken back once the
		// refusal is sent. A request that failed is refused too (the
		// handler answers [internal]), unless the API server stopped
		// waiting (its context ended): the failure policy then decides,
		// and under Ignore its object is created, so it keeps them.
		refused := (err == nil && !d.Allowed) || (err != nil && ctx.Err() == nil)
		if kept != nil && refused && len(*kept) > 0 {
			go withdrawer.WithdrawHolds(context.WithoutCancel(ctx), *kept)
		}
		return d, err
	}
}

// usageReserver is a ledger that holds what requests add to their tenants'
// sums of resources: the local and the strict one.
type usageReserver interface {
	ReserveUsage(ctx context.Context, c quota.Claim, tenant string, adds, expect usage.List) (map[string]int64, quota.Hold, error)
}

// admitResources holds what the request adds to its tenant's sums, if
// anything, decides (admitCounted), and releases the hold unless the
// request is admitted; keepFirst keeps it.
func (e *Engine) admitResources(ctx context.Context, req *admission.Request, view *clusterview.View, ledger quota.Ledger, h *held) (*admission.Decision, error) {
	ur, ok := ledger.(usageReserver)
	if h.resources == nil || !ok {
		return e.admitCounted(ctx, req, view, ledger, h)
	}
	r := *h.resources
	used, hold, err := ur.ReserveUsage(ctx, r.claim, r.tenant, r.adds, r.expect)
	if err != nil {
		return nil, err
	}
	r.used, h.resources, h.keepResources = used, &r, hold
	admitted := false
	defer func() {
		// deferred, so that a panic in the decision (recovered by the
		// handler) does not keep the hold: in strict mode, its tenant's
		// lock
		if !admitted {
			hold.Release()
		}
	}()
	d, err := e.admitCounted(ctx, req, view, ledger, h)
	admitted = err == nil && d.Allowed
	return d, err
}

// hostReserver is a ledger that holds hosts across replicas: the strict one.
type hostReserver interface {
	ReserveHosts(ctx context.Context, self quota.HostClaim, hosts, kept []string) ([]quota.HostConflict, quota.Hold, error)
}

// admitHosts holds the request's hosts (in the ledger of hosts when the
// ledger keeps one, then in the view), decides, and keeps or releases them.
// The ledger is read before the view's index: a claim the ledger skips as
// seen by the view is then in the index the view reads, and an object
// admitted elsewhere and not seen yet is in the ledger (its replica wrote it
// before admitting it) or changes it before this request's write (ErrStale).
func (e *Engine) admitHosts(ctx context.Context, req *admission.Request, view *clusterview.View, ledger quota.Ledger, h *held) (*admission.Decision, error) {
	s := h.hosts
	// The tenant whose holds of hosts the request counts in: none for an
	// administrator's, which are not bounded (quota.MostHostsHeld).
	tenant, kept := s.tenant, keptHosts(req, s.hosts)
	if e.registry.Administers(req.UserInfo.Username, req.UserInfo.Groups) {
		tenant = ""
	}
	var claims []quota.HostConflict
	var strict quota.Hold
	if hr, ok := ledger.(hostReserver); ok {
		self := quota.HostClaim{Group: s.holder.Group, Kind: s.holder.Kind, Namespace: s.holder.Namespace, Name: s.holder.Name, Tenant: tenant}
		var err error
		if claims, strict, err = hr.ReserveHosts(ctx, self, s.hosts, kept); err != nil {
			return overHosts(req, ledger, err)
		}
		defer strict.Release()
	}
	found, hold, err := view.ReserveHosts(s.holder, s.hosts, clusterview.HoldOptions{TTL: reservationTTL(ledger), Tenant: tenant, Served: kept, Most: quota.MostHostsHeld})
	if err != nil {
		return overHosts(req, ledger, err)
	}
	admitted := false
	defer func() {
		if admitted {
			hold.Keep()
		} else {
			hold.Release()
		}
	}()
	found = e.withClaims(found, claims, view)
	reserved := *s
	reserved.reserved, reserved.found = true, found
	h.hosts = &reserved
	h.keepHosts = strict // kept by admitCounted, before the counts
	d, err := e.admitResources(ctx, req, view, ledger, h)
	if err != nil || !d.Allowed {
		return d, err
	}
	admitted = true
	return d, nil
}

// withClaims adds the ledger's claims to the holders the view found, under
// the hosts asked about, each via its own host when not that one (as the
// view lists them).
func (e *Engine) withClaims(found map[string][]clusterview.HostHolder, claims []quota.HostConflict, view *clusterview.View) map[string][]clusterview.HostHolder {
	for _, c := range claims {
		holder := clusterview.Holder{Group: c.Group, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name}
		if slices.ContainsFunc(found[c.Asked], func(h clusterview.HostHolder) bool { return h.Holder == holder }) {
			continue
		}
		via := ""
		if c.Host != c.Asked {
			via = c.Host
		}
		labels, _ := view.NamespaceLabels(c.Namespace)
		if found == nil {
			found = map[string][]clusterview.HostHolder{}
		}
		found[c.Asked] = append(found[c.Asked], clusterview.HostHolder{Holder: holder, Tenant: labels.Get(e.registry.TenantLabel()), Host: via})
	}
	return found
}

// admitCounted is Admit's counting: it reserves the request's place in its
// tenant's counts, if it has one, and decides.
func (e *Engine) admitCounted(ctx context.Context, req *admission.Request, view *clusterview.View, ledger quota.Ledger, h *held) (*admission.Decision, error) {
	key, tenants := e.counted(req, view)
	if key == "" || len(tenants) == 0 {
		d, err := e.validate(ctx, req, view, h)
		if err != nil || !d.Allowed {
			return d, err
		}
		if err := h.keepFirst(ctx); err != nil {
			return nil, err
		}
		return d, nil
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
		h.counts = &counting{key: key, tenants: tenants}
		d, err := e.admitOnce(ctx, req, view, ledger, claim, h)
		if !errors.Is(err, quota.ErrStale) || errors.As(err, new(keptFirstError)) {
			return d, err
		}
		if ctx.Err() != nil {
			return nil, err
		}
	}
}

// admitOnce reserves, decides, and keeps or releases the place.
func (e *Engine) admitOnce(ctx context.Context, req *admission.Request, view *clusterview.View, ledger quota.Ledger, claim quota.Claim, h *held) (d *admission.Decision, err error) {
	counts, hold, err := ledger.Reserve(ctx, claim, h.counts.tenants)
	if err != nil {
		return nil, err
	}
	admitted := false
	defer func() {
		if !admitted {
			hold.Release()
		}
	}()
	h.counts.counts = counts
	if d, err = e.validate(ctx, req, view, h); err != nil || !d.Allowed {
		return d, err
	}
	if err := h.keepFirst(ctx); err != nil {
		return nil, err
	}
	if err := hold.Keep(ctx); err != nil {
		if h.kept != nil {
			// kept over several tenants, it may have written some
			*h.kept = append(*h.kept, hold)
		}
		return nil, err
	}
	admitted = true
	return d, nil
}

// reservationTTL is how long the ledger's admitted creates hold their
// place unseen, which admitted requests hold their hosts for too.
func reservationTTL(ledger quota.Ledger) time.Duration {
	if l, ok := ledger.(interface{ ReservationTTL() time.Duration }); ok {
		return l.ReservationTTL()
	}
	return quota.DefaultReservationTTL
}
