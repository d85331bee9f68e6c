package clusterview

import (
	"time"

	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/usage"
)

// usages interns the usage lists of the objects seen: pods made from one
// template add the same amounts, so a cluster's 100,000s of pods share a
// few hundred lists, and the view keeps a 4-byte reference per object.
// Reference 0 is the empty list.
type usages struct {
	lists []usage.List
	refs  []int
	index map[string]uint32
	free  []uint32
}

func newUsages() *usages {
	return &usages{lists: []usage.List{nil}, refs: []int{0}, index: map[string]uint32{}}
}

// intern returns l's reference, counting one more holder of it.
func (u *usages) intern(l usage.List) uint32 {
	if len(l) == 0 {
		return 0
	}
	key := l.Key()
	if ref, ok := u.index[key]; ok {
		u.refs[ref]++
		return ref
	}
	var ref uint32
	if n := len(u.free); n > 0 {
		ref, u.free = u.free[n-1], u.free[:n-1]
		u.lists[ref], u.refs[ref] = l, 1
	} else {
		// Fewer lists than objects, which the view holds far fewer of
		// than 2^32.
		ref = uint32(len(u.lists)) //nolint:gosec // see above
		u.lists, u.refs = append(u.lists, l), append(u.refs, 1)
	}
	u.index[key] = ref
	return ref
}

// release counts one holder of ref fewer, forgetting a list none holds.
func (u *usages) release(ref uint32) {
	if ref == 0 {
		return
	}
	if u.refs[ref]--; u.refs[ref] == 0 {
		delete(u.index, u.lists[ref].Key())
		u.lists[ref] = nil
		u.free = append(u.free, ref)
	}
}

// addUsage adds (sign 1) or takes away (sign -1) an object's usage in its
// namespace's and tenant's sums; the caller holds v.mu for writing.
func (v *View) addUsage(namespace string, l usage.List, sign int) {
	for _, a := range l {
		v.add(namespace, a.Key, sign*int(a.N))
	}
}

// Used returns a tenant's sum of a quota resource (usage.Amount's scale):
// the objects seen and the requests holding what they add (admitted or
// being decided, not seen yet).
func (v *View) Used(tenant, key string) int64 {
	return int64(v.Count(tenant, key))
}

// UsedAdmitted is Used without what the requests being decided add, as
// CountAdmitted is Count without the creates being decided.
func (v *View) UsedAdmitted(tenant, key string) int64 {
	return int64(v.CountAdmitted(tenant, key))
}

// ReserveUsage holds what a create or update of the object c names adds to
// its tenant's sums while it is decided, as Reserve holds a create's place
// in the counts, and returns the tenant's sum of each key of adds (what the
// request adds by its own account) as the decision must see it, before
// adds: the objects seen plus the holds, the object at the most it may hold
// (quota.Reservation.TakeUsage). c is a quota.UsageClaim. The hold counts
// expect (the object's usage once stored) over the object's usage seen, and
// lasts until the view sees the object with expect or it expires after ttl.
func (v *View) ReserveUsage(c quota.Claim, uid, tenant string, adds, expect usage.List, ttl time.Duration) (map[string]int64, *quota.Reservation) {
	r := v.reservations.PrepareUsage(c, uid, tenant, adds, expect, ttl)
	v.mu.RLock()
	defer v.mu.RUnlock()
	own, _ := v.seenUsage(quota.CountClaim(c))
	return r.TakeUsage(v.seenCount, own), r
}

// SeenUsage returns the usage of the object a claim names (c.Key is its
// count key) as the view has seen it, and whether it has seen it.
func (v *View) SeenUsage(c quota.Claim) (usage.List, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.seenUsage(c)
}

// UsedUnseen is Used of each key plus, for each pending entry, the usage
// its object is expected to have over the usage the view has of it, unless
// the view has seen the object come and go, in one read (quota.Counter).
func (v *View) UsedUnseen(tenant string, keys []string, pending []quota.PendingUsage) map[string]int64 {
	v.mu.RLock()
	defer v.mu.RUnlock()
	used := make(map[string]int64, len(keys))
	for _, k := range keys {
		used[k] = int64(v.count(tenant, k))
	}
	for _, p := range pending {
		if v.cameAndWent(quota.Pending{Claim: p.Claim, UID: p.UID}) {
			continue
		}
		seen, _ := v.seenUsage(p.Claim)
		held := p.Expect.Increase(seen)
		for _, k := range keys {
			used[k] += held.Get(k)
		}
	}
	return used
}

// Reached reports whether the view has seen a pending entry's object with
// the usage the entry expects, or seen it come and go (quota.Counter).
func (v *View) Reached(p quota.PendingUsage) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	seen, ok := v.seenUsage(p.Claim)
	return ok && seen.Covers(p.Expect) || v.cameAndWent(quota.Pending{Claim: p.Claim, UID: p.UID})
}

// seenUsage is SeenUsage; the caller holds v.mu.
func (v *View) seenUsage(c quota.Claim) (usage.List, bool) {
	ref, ok := v.objects[v.id(c)]
	if !ok {
		return nil, false
	}
	return v.usages.lists[ref], true
}
