package clusterview

import (
	"time"

	"github.com/tenantguard/tenantguard/internal/quota"
)

// visits remember, for the strict ledger (quota.StrictLedger), when the
// objects first seen within the horizon arrived and when they went. A
// ledger entry counts a create until its object is seen; once the object
// has come and gone (a short Job's pod, a pod deleted at once), the entry
// must not count it again until it expires. An object that arrived after
// the entry was admitted is the entry's object; one seen before is an
// earlier object of that name (a StatefulSet's pod replaced), whose going
// says nothing of the create the entry holds.
type visits struct {
	horizon time.Duration
	now     func() time.Time
	byID    map[objectID]visit
	// order is byID's arrivals in time, for dropping those past the horizon.
	order []arrival
}

type visit struct{ arrived, left time.Time }

type arrival struct {
	id objectID
	at time.Time
}

// RememberVisits makes the view remember, for horizon, when the objects
// it sees arrive and go, so that CountUnseen and UsedUnseen leave out the
// claims whose objects came after their admission and went
// (quota.Pending). The strict ledger needs it, with its reservation TTL
// as horizon; until called, the view remembers none.
func (v *View) RememberVisits(horizon time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.visits = &visits{horizon: horizon, now: time.Now, byID: map[objectID]visit{}}
}

// arrived records that the view saw an object it did not hold; the caller
// holds v.mu for writing.
func (v *View) arrived(id objectID) {
	if v.visits == nil {
		return
	}
	now := v.visits.now()
	v.visits.prune(now)
	v.visits.byID[id] = visit{arrived: now}
	v.visits.order = append(v.visits.order, arrival{id, now})
}

// left records that an object the view held went; the caller holds v.mu
// for writing.
func (v *View) left(id objectID) {
	if v.visits == nil {
		return
	}
	if vis, ok := v.visits.byID[id]; ok {
		vis.left = v.visits.now()
		v.visits.byID[id] = vis
	}
}

// prune forgets the arrivals past the horizon: every entry admitted
// before them has expired.
func (s *visits) prune(now time.Time) {
	n := 0
	for n < len(s.order) && now.Sub(s.order[n].at) > s.horizon {
		if a := s.order[n]; s.byID[a.id].arrived.Equal(a.at) {
			delete(s.byID, a.id)
		}
		n++
	}
	if n > 0 {
		s.order = append(s.order[:0], s.order[n:]...)
	}
}

// cameAndWent reports whether the object a pending claim names arrived
// after the claim was admitted and has gone; the caller holds v.mu.
func (v *View) cameAndWent(p quota.Pending) bool {
	if v.visits == nil || p.Admitted.IsZero() {
		return false
	}
	vis, ok := v.visits.byID[v.id(p.Claim)]
	return ok && !vis.left.IsZero() && vis.arrived.After(p.Admitted)
}
