package quota

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tenantguard/tenantguard/internal/usage"
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
	mu   sync.Mutex
	held map[Claim]*place
	// pending counts every place by tenant and key; admitted only those of
	// the creates admitted (kept), not of those being decided.
	pending, admitted map[tenantKey]int
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
	// sums is set for a hold on resources (PrepareUsage); a place without
	// it counts one object under its claim's key. expect is the usage the
	// object is seen with once stored, which ends the hold; adds is what
	// the place adds to its tenant's sums meanwhile: expect over seen, the
	// usage the view has of the object.
	sums               bool
	adds, expect, seen usage.List
	// merges counts the requests that found the place held and merged
	// what they expect into it (TakeUsage).
	merges int
	// uid is the uid of the object the requests holding the place create
	// or change, "" when unknown or when they name several (a create of
	// a name whose object is being deleted): the view's events of another
	// object of the claim's name do not end the hold.
	uid string
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{held: map[Claim]*place{}, pending: map[tenantKey]int{}, admitted: map[tenantKey]int{}, now: time.Now}
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
	// at is the place the reservation holds, once taken: Keep and Release
	// leave the claim's place alone when it is another by then.
	at *place
	// asks is what the request adds by its own account (PrepareUsage):
	// its object's usage over the usage of the object as the request
	// found it.
	asks usage.List
	// into is the place of an earlier request of the object this one
	// merged what it expects into, was what that place expected before,
	// and merge the place's merges after it: Release gives was back when
	// no request merged into the place since.
	into  *place
	was   usage.List
	merge int
}

// Prepare makes a hold on c's place in tenants' counts of c.Key, not taken
// yet: everything Take needs is allocated here, before any lock, so that
// other requests seldom wait on an allocation (or the garbage collector's
// assist it may run). ttl bounds how long an admitted create holds its
// place without being seen.
func (t *Table) Prepare(c Claim, uid string, tenants []string, ttl time.Duration) *Reservation {
	// The table keeps copies: a claim's strings may share a whole request
	// body, and the hold outlives the request. Made here, they are dropped
	// when the claim is held already (the API server retried the create).
	return &Reservation{
		table:  t,
		claim:  Claim{strings.Clone(c.Key), strings.Clone(c.Namespace), strings.Clone(c.Name)},
		ttl:    ttl,
		fresh:  &place{tenants: slices.Clone(tenants), uid: strings.Clone(uid)},
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
	counts := r.counts
	r.counts = nil
	t := r.table
	t.mu.Lock()
	defer t.mu.Unlock()
	tenants, p := r.hold()
	for _, tenant := range tenants {
		n := seen(tenant, r.claim.Key) + t.pending[tenantKey{tenant, r.claim.Key}]
		if slices.Contains(p.tenants, tenant) {
			n-- // this create itself
		}
		counts[tenant] = n
	}
	return counts
}

// hold puts the reservation's place in the table, or finds the place of
// the same claim taken before (a retried create), and returns the tenants
// it was prepared for and the place; the caller holds t.mu.
func (r *Reservation) hold() ([]string, *place) {
	fresh := r.fresh
	r.fresh = nil
	t := r.table
	now := t.now()
	t.expire(now)
	p := t.held[r.claim]
	switch {
	case p == nil:
		p = fresh
		t.held[r.claim] = p
		addPlace(t.pending, r.claim.Key, p, 1)
	case p.uid != fresh.uid:
		p.uid = "" // requests of two objects of one name
	}
	p.deciding++
	p.expires = now.Add(r.ttl)
	r.at = p
	return fresh.tenants, p
}

// Keep marks the create admitted: its place is held until the object is
// seen or the hold expires.
func (r *Reservation) Keep() {
	t := r.table
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.held[r.claim]; p != nil && p == r.at {
		p.deciding--
		if !p.kept {
			p.kept = true
			addPlace(t.admitted, r.claim.Key, p, 1)
		}
		p.expires = t.now().Add(r.ttl)
	}
}

// Release gives the place back: the create was refused, or not decided.
// A claim an earlier decision admitted keeps its place, as it expected it
// unless another request merged into it since (a retry of this one, or a
// third update), which leaves it as large as both: never less than a
// request kept expects.
func (r *Reservation) Release() {
	t := r.table
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.held[r.claim]
	if p == nil || p != r.at {
		return // taken over, or expired, since: another request's now
	}
	p.deciding--
	switch {
	case p.deciding <= 0 && !p.kept:
		t.drop(r.claim)
	case r.into == p && p.merges == r.merge:
		t.reshape(p, r.was, p.seen)
	}
}

// Reserved returns how many creates hold a place in tenant's count of key
// (or, for a resource, what their holds add to its sum): those admitted and
// not seen yet, and those being decided. Holds past their TTL are dropped
// first, as by a reservation: the metrics, status and the audit read these
// too, between reservations.
func (t *Table) Reserved(tenant, key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(t.now())
	return t.pending[tenantKey{tenant, key}]
}

// Admitted is Reserved without the creates being decided: only those
// admitted and not seen yet. An object already stored is judged against
// these (the audit), not against creates that may yet be refused.
func (t *Table) Admitted(tenant, key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(t.now())
	return t.admitted[tenantKey{tenant, key}]
}

// TakeOver drops the hold of an object seen, whose count now includes it,
// unless the hold is another object's of the same name (uid, "" when
// unknown, tells them apart): an event of an object being deleted leaves
// the hold of a create of its name. The caller holds the lock that keeps
// Take's seen counts still, for writing, and counts the object under it:
// no Take sees the object both as seen and as held, or as neither.
func (t *Table) TakeOver(c Claim, uid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.takeOver(c, uid)
}

// takeOver is TakeOver; the caller holds t.mu.
func (t *Table) takeOver(c Claim, uid string) {
	if p, ok := t.held[c]; ok && !p.another(uid) {
		t.drop(c)
	}
}

// another reports whether the view's object of uid is another than the one
// the place is held for; both uids must be known.
func (p *place) another(uid string) bool { return p.uid != "" && uid != "" && p.uid != uid }

// drop drops a claim's hold; the caller holds t.mu.
func (t *Table) drop(c Claim) {
	p, ok := t.held[c]
	if !ok {
		return
	}
	delete(t.held, c)
	t.account(c.Key, p, -1)
}

// account counts a place in the sums of the holds (n = 1), and of the
// admitted ones when it is kept, or takes it out of them (n = -1); the
// caller holds t.mu.
func (t *Table) account(key string, p *place, n int) {
	addPlace(t.pending, key, p, n)
	if p.kept {
		addPlace(t.admitted, key, p, n)
	}
}

// addPlace counts a place in its tenants' counts (n = 1) or takes it out
// (n = -1): one object under its claim's key, or what it adds to each
// resource's sum; the caller holds the table's lock.
func addPlace(counts map[tenantKey]int, key string, p *place, n int) {
	if !p.sums {
		count(counts, key, p.tenants, n)
		return
	}
	for _, a := range p.adds {
		count(counts, a.Key, p.tenants, n*int(a.N))
	}
}

// count adds n to each tenant's count of key. Counts that reach zero are
// dropped, so that tenant names seen once (a namespace label naming no
// tenant) leave nothing behind.
func count(counts map[tenantKey]int, key string, tenants []string, n int) {
	for _, tenant := range tenants {
		k := tenantKey{tenant, key}
		counts[k] += n
		if counts[k] == 0 {
			delete(counts, k)
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

// PrepareUsage makes a hold on what a create or update adds to its tenant's
// sums of quota resources, not taken yet, as Prepare does for counts; c
// names the object under UsageKey. adds is what the request adds by its
// own account (its object's usage over the object's usage as the request
// found it, by key); expect is the usage the object will be seen with once
// stored: the hold lasts until the view sees it so (TakeOverObject) or the
// hold expires.
func (t *Table) PrepareUsage(c Claim, uid, tenant string, adds, expect usage.List, ttl time.Duration) *Reservation {
	r := t.Prepare(c, uid, []string{tenant}, ttl)
	r.fresh.sums, r.fresh.expect, r.asks = true, expect, adds
	return r
}

// TakeUsage counts a hold made by PrepareUsage in its tenant's sums and
// returns the tenant's sum of each key the request adds to, as the decision
// must see it, before what the request adds by its own account: the
// objects seen (seen's sums) plus the holds of the requests being decided
// or admitted and not seen yet. own is the object's usage as the view has
// it (nil when unseen). The object counts at the most it may hold once
// stored: its usage seen or expected by this request or by an earlier one
// not seen yet (two updates of one object, the second decided before the
// view saw the first), so a sum never misses an earlier update's increase.
// The caller keeps seen's sums and own from changing until it returns.
func (r *Reservation) TakeUsage(seen func(tenant, key string) int, own usage.List) map[string]int64 {
	asks, fresh := r.asks, r.fresh
	r.counts = nil
	fresh.adds, fresh.seen = fresh.expect.Increase(own), own
	used := make(map[string]int64, len(asks))
	t := r.table
	t.mu.Lock()
	defer t.mu.Unlock()
	tenants, p := r.hold()
	if p != fresh {
		// A place of the object held before: a retry of this request,
		// or an earlier update admitted and not seen yet.
		p.merges++
		r.into, r.was, r.merge = p, p.expect, p.merges
		t.reshape(p, p.expect.Max(fresh.expect), own)
	}
	for _, a := range asks {
		used[a.Key] = int64(seen(tenants[0], a.Key)+t.pending[tenantKey{tenants[0], a.Key}]) - a.N
	}
	return used
}

// reshape makes a place of resources expect expect, over the usage seen of
// its object, in its tenant's sums; the caller holds t.mu.
func (t *Table) reshape(p *place, expect, seen usage.List) {
	t.account("", p, -1)
	p.expect, p.adds, p.seen = expect, expect.Increase(seen), seen
	t.account("", p, 1)
}

// TakeOverObject is the view seeing the object c names (uid, "" when
// unknown) with usage seen (nil when it has none), in one step: TakeOver
// of its create's place, and its resources hold followed. That hold ends
// once seen reaches what it expects, as the view's sums then hold it; until
// then it adds what it expects over seen. An older version of the object
// (an informer event from before the request) leaves the hold in place.
// Another object of the name (one being deleted, whose name a create
// holds) is not the hold's: the hold then counts all it expects. The
// caller holds the view's writer's lock, as for TakeOver.
func (t *Table) TakeOverObject(c Claim, uid string, seen usage.List) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.takeOver(c, uid)
	uc := UsageClaim(c)
	p, ok := t.held[uc]
	switch {
	case !ok:
	case p.another(uid):
		t.reshape(p, p.expect, nil)
	case seen.Covers(p.expect):
		t.drop(uc)
	default:
		t.reshape(p, p.expect, seen)
	}
}

// UsageGone follows the object of a resources hold out of the view (uid,
// "" when unknown): the hold of that object ends, as its request cannot be
// stored any more; one of another object of the name, or of an unknown
// one, counts all it expects, the object gone no longer counting. The
// caller holds the view's writer's lock, as for TakeOver.
func (t *Table) UsageGone(c Claim, uid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.held[c]
	switch {
	case !ok:
	case p.uid != "" && p.uid == uid:
		t.drop(c)
	default:
		t.reshape(p, p.expect, nil)
	}
}
