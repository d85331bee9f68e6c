package clusterview

import (
	"strings"
	"time"

	"github.com/tenantguard/tenantguard/internal/quota"
)

// visits remember, for the strict ledger (quota.StrictLedger), the objects
// first seen within the horizon, by uid, and whether they went. A ledger
// entry counts a create until its object is seen; once the object has come
// and gone (a short Job's pod, a pod deleted at once), the entry must not
// count it again until it expires. The entry's object is the one of its
// uid: another of that name (a StatefulSet's pod replaced, seen late by a
// lagging informer) says nothing of the create the entry holds.
type visits struct {
	horizon time.Duration
	now     func() time.Time
	byID    map[objectID]visit
	// order is byID's arrivals in time, for dropping those past the horizon.
	order []arrival
}

type visit struct {
	uid     string
	arrived time.Time
	left    bool
}

type arrival struct {
	id objectID
	at time.Time
}

// RememberVisits makes the view remember, for horizon, the objects it sees
// arrive (by uid) and go, so that CountUnseen and UsedUnseen leave out the
// claims whose objects came and went (quota.Pending). The strict ledger needs it, with its reservation TTL
// as horizon; until called, the view remembers none.
func (v *View) RememberVisits(horizon time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.visits = &visits{horizon: horizon, now: time.Now, byID: map[objectID]visit{}}
}

// arrived records that the view saw an object it did not hold, of uid;
// the caller holds v.mu for writing.
func (v *View) arrived(id objectID, uid string) {
	if v.visits == nil || uid == "" {
		return
	}
	now := v.visits.now()
	v.visits.prune(now)
	v.visits.byID[id] = visit{uid: strings.Clone(uid), arrived: now}
	v.visits.order = append(v.visits.order, arrival{id, now})
}

// left records that an object the view held went; the caller holds v.mu
// for writing.
func (v *View) left(id objectID) {
	if v.visits == nil {
		return
	}
	if vis, ok := v.visits.byID[id]; ok {
		vis.left = true
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

// cameAndWent reports whether the object of a pending claim, by its uid,
// arrived and has gone; the caller holds v.mu.
func (v *View) cameAndWent(p quota.Pending) bool {
	if v.visits == nil || p.UID == "" {
		return false
	}
	vis, ok := v.visits.byID[v.id(p.Claim)]
	return ok && vis.left && vis.uid == p.UID
}
