package quota

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// Table holds the places of the creates being decided or admitted and not
// seen yet, and counts them by tenant and quota key. The cluster view keeps
// one beside its counts of the objects seen and calls it under its own lock:
// Take reads the view's counts while the view's readers' lock is held,
// TakeOver runs while the view's writer's lock is held. The table's own lock
// is always taken after the view's, never before, and guards only the
// reservations, so that a create's hold being written does not stop the
// other requests' reads of the view.
//
// Use NewTable; the zero value is not usable.
type Table struct {
	mu      sync.Mutex
	held    map[Claim]*place
	pending map[tenantKey]int
	// nextExpiry is when expire next looks for places whose time is up.
	nextExpiry time.Time
	now        func() time.Time
}

// tenantKey is a tenant's count of a quota key.
type tenantKey struct{ tenant, key string }

// place is the hold of one claim.
type place struct {
	tenants []string
	// deciding counts the decisions of this claim still running (the API
	// server may retry a create while the first call is being decided).
	deciding int
	// kept is set once a decision admitted the create.
	kept    bool
	expires time.Time
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{held: map[Claim]*place{}, pending: map[tenantKey]int{}, now: time.Now}
}

// Reservation is a claim's hold. Take it once, then call exactly one of
// Keep and Release once the create is decided.
type Reservation struct {
	table *Table
	claim Claim
	ttl   time.Duration
	// fresh is the place Take puts in the table when the claim has none,
	// and counts the map it fills in: both made by Prepare.
	fresh  *place
	counts map[string]int
}

// Prepare makes a hold on c's place in tenants' counts of c.Key, not taken
// yet: everything Take needs is allocated here, before any lock, so that
// other requests seldom wait on an allocation (or the garbage collector's
// assist it may run). ttl bounds how long an admitted create holds its
// place without being seen.
func (t *Table) Prepare(c Claim, tenants []string, ttl time.Duration) *Reservation {
	// The table keeps copies: a claim's strings may share a whole request
	// body, and the hold outlives the request. Made here, they are dropped
	// when the claim is held already (the API server retried the create).
	return &Reservation{
		table:  t,
		claim:  Claim{strings.Clone(c.Key), strings.Clone(c.Namespace), strings.Clone(c.Name)},
		ttl:    ttl,
		fresh:  &place{tenants: slices.Clone(tenants)},
		counts: make(map[string]int, len(tenants)),
	}
}

// Take counts the create in its tenants' counts, and returns each tenant's
// count as the decision must see it: the objects seen (seen's count), plus
// the creates being decided or admitted but not seen yet, this one left
// out. The hold is taken in the same step, so of parallel creates each sees
// the ones that took theirs before it. The caller keeps seen's counts from
// changing until Take returns (the view's readers' lock).
func (r *Reservation) Take(seen func(tenant, key string) int) map[string]int {
	fresh, counts := r.fresh, r.counts
	r.fresh, r.counts = nil, nil
	t := r.table
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.expire(now)
	p := t.held[r.claim]
	if p == nil {
		p = fresh
		t.held[r.claim] = p
		t.count(r.claim.Key, p.tenants, 1)
	}
	p.deciding++
	p.expires = now.Add(r.ttl)
	for _, tenant := range fresh.tenants {
		n := seen(tenant, r.claim.Key) + t.pending[tenantKey{tenant, r.claim.Key}]
		if slices.Contains(p.tenants, tenant) {
			n-- // this create itself
		}
		counts[tenant] = n
	}
	return counts
}

// Keep marks the create admitted: its place is held until the object is
// seen or the hold expires.
func (r *Reservation) Keep() {
	t := r.table
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.held[r.claim]; p != nil {
		p.deciding--
		p.kept = true
		p.expires = t.now().Add(r.ttl)
	}
}

// Release gives the place back: the create was refused, or not decided.
// A claim an earlier decision admitted keeps its place.
func (r *Reservation) Release() {
	t := r.table
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.held[r.claim]; p != nil {
		p.deciding--
		if p.deciding <= 0 && !p.kept {
			t.drop(r.claim)
		}
	}
}

// Reserved returns how many creates hold a place in tenant's count of key.
func (t *Table) Reserved(tenant, key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pending[tenantKey{tenant, key}]
}

// TakeOver drops the hold of an object seen, whose count now includes it.
// The caller holds the lock that keeps Take's seen counts still, for
// writing, and counts the object under it: no Take sees the object both as
// seen and as held, or as neither.
func (t *Table) TakeOver(c Claim) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.drop(c)
}

// drop drops a claim's hold; the caller holds t.mu.
func (t *Table) drop(c Claim) {
	p, ok := t.held[c]
	if !ok {
		return
	}
	delete(t.held, c)
	t.count(c.Key, p.tenants, -1)
}

// count adds n to each tenant's pending count of key; the caller holds
// t.mu. Counts that reach zero are dropped, so that tenant names seen once
// (a namespace label naming no tenant) leave nothing behind.
func (t *Table) count(key string, tenants []string, n int) {
	for _, tenant := range tenants {
		k := tenantKey{tenant, key}
		t.pending[k] += n
		if t.pending[k] == 0 {
			delete(t.pending, k)
		}
	}
}

// expire drops the holds whose time is up, at most once a second; the
// caller holds t.mu. Until then an expired hold still counts, which can only
// refuse a create, never admit one too many. A decision never runs longer
// than the hold's ttl (the webhook's timeout is at most 30 s).
func (t *Table) expire(now time.Time) {
	if now.Before(t.nextExpiry) {
		return
	}
	t.nextExpiry = now.Add(time.Second)
	for c, p := range t.held {
		if now.After(p.expires) {
			t.drop(c)
		}
	}
}
