package clusterview

import (
	"slices"
	"strings"
	"time"
)

// A create admitted by the webhook reaches the view only when the informer
// sees the stored object, a few milliseconds to a second later. Until then
// its tenant's count does not include it, and a burst of parallel creates
// would all be decided against the same count and overshoot the quota.
// Reservations close that window: a create being decided holds a place in
// its tenants' counts; a refused create gives it back at once, an admitted
// one keeps it until the informer sees the object (the count then includes
// it as an object) or until the hold expires (the create failed after
// admission, e.g. another webhook refused it).

// Claim names an object being created: its quota key, namespace ("" for a
// namespace) and name.
type Claim struct {
	Key       string
	Namespace string
	Name      string
}

// reservation is the hold of one claim.
type reservation struct {
	tenants []string
	// deciding counts the decisions of this claim still running (the API
	// server may retry a create while the first call is being decided).
	deciding int
	// kept is set once a decision admitted the create.
	kept    bool
	expires time.Time
}

// Reservation is a claim's hold, returned by Reserve. Exactly one of Keep
// and Release must be called once the create is decided.
type Reservation struct {
	view  *View
	claim objectKey
	ttl   time.Duration
}

// Reserve counts a create that is about to be decided against tenants'
// counts of c.Key. It returns each tenant's count as the decision must see
// it: the objects seen, plus the creates being decided or admitted but not
// seen yet, this one left out. The hold is taken in the same step, so of
// parallel creates each sees the ones reserved before it. ttl bounds how
// long an admitted create holds its place without being seen.
//
// It reads the counts of objects seen under a read lock, which only the
// view's writers (informers) contend for, and holds the reservations' lock
// for the hold itself; the claim's copies, the hold and the counts are
// allocated before either lock, so that other requests seldom wait on an
// allocation (or the garbage collector's assist it may run).
func (v *View) Reserve(c Claim, tenants []string, ttl time.Duration) (map[string]int, *Reservation) {
	// The view keeps copies: a claim's strings may share a whole request
	// body, and the hold outlives the request. Made here, they are dropped
	// when the claim is held already (the API server retried the create).
	k := objectKey{strings.Clone(c.Key), strings.Clone(c.Namespace), strings.Clone(c.Name)}
	fresh := &reservation{tenants: slices.Clone(tenants)}
	counts := make(map[string]int, len(tenants))
	out := &Reservation{view: v, claim: k, ttl: ttl}
	v.mu.RLock()
	defer v.mu.RUnlock()
	v.res.Lock()
	defer v.res.Unlock()
	now := v.now()
	v.expire(now)
	r := v.reserved[k]
	if r == nil {
		r = fresh
		v.reserved[k] = r
		for _, t := range r.tenants {
			increment(v.pending, t, k.key, 1)
		}
	}
	r.deciding++
	r.expires = now.Add(ttl)
	for _, t := range tenants {
		n := v.perTenant[t][c.Key] + v.pending[t][c.Key]
		if slices.Contains(r.tenants, t) {
			n-- // this create itself
		}
		counts[t] = n
	}
	return counts, out
}

// Keep marks the create admitted: its place is held until the object is
// seen or the hold expires.
func (r *Reservation) Keep() {
	v := r.view
	v.res.Lock()
	defer v.res.Unlock()
	if res := v.reserved[r.claim]; res != nil {
		res.deciding--
		res.kept = true
		res.expires = v.now().Add(r.ttl)
	}
}

// Release gives the place back: the create was refused, or not decided.
// A claim an earlier decision admitted keeps its place.
func (r *Reservation) Release() {
	v := r.view
	v.res.Lock()
	defer v.res.Unlock()
	if res := v.reserved[r.claim]; res != nil {
		res.deciding--
		if res.deciding <= 0 && !res.kept {
			v.unreserve(r.claim)
		}
	}
}

// Reserved returns how many creates hold a place in tenant's count of key.
func (v *View) Reserved(tenant, key string) int {
	v.res.Lock()
	defer v.res.Unlock()
	return v.pending[tenant][key]
}

// takeOver drops the hold of an object seen, whose count now includes it;
// the caller holds v.mu for writing.
func (v *View) takeOver(k objectKey) {
	v.res.Lock()
	defer v.res.Unlock()
	v.unreserve(k)
}

// unreserve drops a claim's hold; the caller holds v.res.
func (v *View) unreserve(k objectKey) {
	r, ok := v.reserved[k]
	if !ok {
		return
	}
	delete(v.reserved, k)
	for _, t := range r.tenants {
		increment(v.pending, t, k.key, -1)
	}
}

// expire drops the holds whose time is up, at most once a second; the
// caller holds v.res. Until then an expired hold still counts, which can only
// refuse a create, never admit one too many. A decision never runs longer
// than the hold's ttl (the webhook's timeout is at most 30 s).
func (v *View) expire(now time.Time) {
	if now.Before(v.nextExpiry) {
		return
	}
	v.nextExpiry = now.Add(time.Second)
	for k, r := range v.reserved {
		if now.After(r.expires) {
			v.unreserve(k)
		}
	}
}

// Seen reports whether the view has seen the object a claim names.
func (v *View) Seen(c Claim) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if c.Key == NamespacesKey && c.Namespace == "" {
		_, ok := v.namespaces[c.Name]
		return ok
	}
	_, ok := v.objects[v.id(objectKey{c.Key, c.Namespace, c.Name})]
	return ok
}
