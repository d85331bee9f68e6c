package quota

import (
	"context"
	"errors"
	"time"
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
	Reserve(ctx context.Context, c Claim, tenants []string) (map[string]int, Hold, error)
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

// Withdrawer is a hold that can take back what its Keep wrote. A request
// keeps its holds in turn (hosts, sums of resources, then counts: package
// engine); one refused after some were kept, because a later hold found
// its ledger changed and the request decided again was refused, withdraws
// them (HoldWithdrawer), so that its entries stop counting then and not
// when they expire. The strict ledger's holds are Withdrawers; a local hold
// is kept last or not at all.
type Withdrawer interface {
	// Withdraw removes the entries Keep wrote, if any and still there. It
	// is for after Keep and Release; an error leaves the entries to expire.
	Withdraw(ctx context.Context) error
}

// HoldWithdrawer is a ledger that takes back the holds kept for a request
// refused in the end (each a Withdrawer): the strict one. It is best
// effort, for after the refusal is sent: an entry it cannot remove expires
// with the ledger's TTL.
type HoldWithdrawer interface {
	WithdrawHolds(ctx context.Context, holds []Hold)
}

// ttlOr is ttl, or DefaultReservationTTL when ttl is not set.
func ttlOr(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return DefaultReservationTTL
	}
	return ttl
}
