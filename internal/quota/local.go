package quota

import (
	"context"
	"time"

	"github.com/tenantguard/tenantguard/internal/usage"
)

// Reserver is what the local ledger needs of the cluster view
// (clusterview.View): a hold taken in its Table in the same step as the
// counts of the objects seen are read, so that no object is counted both as
// seen and as held, nor left out of both.
type Reserver interface {
	Reserve(c Claim, uid string, tenants []string, ttl time.Duration) (map[string]int, *Reservation)
	ReserveUsage(c Claim, uid, tenant string, adds, expect usage.List, ttl time.Duration) (map[string]int64, *Reservation)
}

// LocalLedger reserves in the view's Table: exact within one replica, with
// no API call. Replicas do not see each other's reservations.
type LocalLedger struct {
	View Reserver
	// TTL bounds how long an admitted create holds its place unseen;
	// DefaultReservationTTL when 0.
	TTL time.Duration
}

// Reserve implements Ledger.
func (l LocalLedger) Reserve(ctx context.Context, c Claim, tenants []string) (map[string]int, Hold, error) {
	counts, r := l.View.Reserve(c, uidOf(ctx), tenants, ttlOr(l.TTL))
	return counts, localHold{r}, nil
}

// ReserveUsage holds what a request adds to its tenant's sums in the view's
// Table, as Reserve holds a create's place in the counts.
func (l LocalLedger) ReserveUsage(ctx context.Context, c Claim, tenant string, adds, expect usage.List) (map[string]int64, Hold, error) {
	used, r := l.View.ReserveUsage(c, uidOf(ctx), tenant, adds, expect, ttlOr(l.TTL))
	return used, localHold{r}, nil
}

// localHold is a Reservation as a Hold: keeping it never finds the counts
// changed, as every create of this replica reserved in the same Table.
type localHold struct{ r *Reservation }

func (h localHold) Keep(context.Context) error {
	h.r.Keep()
	return nil
}

func (h localHold) Release() { h.r.Release() }

// ReservationTTL is how long an admitted create holds its place unseen.
func (l LocalLedger) ReservationTTL() time.Duration { return ttlOr(l.TTL) }
