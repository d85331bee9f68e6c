package quota

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/tenantguard/tenantguard/internal/usage"
)

// Counter is what the strict ledger needs of the cluster view
// (clusterview.View): the counts and sums of the objects seen, with the
// ledger's claims whose objects are not seen yet (a claim seen counts as an
// object, no longer as a claim). Each answer is one read of the view: an
// object the view sees between two reads would count in neither.
type Counter interface {
	// CountUnseen is a tenant's count of a quota key plus the claims
	// whose objects are not seen (nor seen come after the claim's
	// admission and go).
	CountUnseen(tenant, key string, claims []Pending) int
	// UsedUnseen is a tenant's sum of each key plus, for each pending
	// entry, the usage its object is expected to have over the usage it is
	// seen with (all of it when unseen), unless the object was seen to
	// come and go.
	UsedUnseen(tenant string, keys []string, pending []PendingUsage) map[string]int64
	// Reached reports whether a pending entry's object is seen with the
	// usage it expects, or was seen to come and go: the entry is done.
	Reached(p PendingUsage) bool
}

// Pending is a ledger's admitted create not seen yet: the object it names,
// and that object's uid ("" when unknown).
type Pending struct {
	Claim Claim
	UID   string
}

// PendingUsage is a ledger's admitted create or update not seen yet: the
// object it names, the usage its object is expected to have once stored,
// and its uid ("" when unknown).
type PendingUsage struct {
	Claim  Claim
	Expect usage.List
	UID    string
}

// objectUID is the context key of WithObjectUID.
type objectUID struct{}

// WithObjectUID is ctx carrying the uid of the object a request creates or
// changes (its metadata.uid, which the API server sets before validating
// admission), which the strict ledger writes with the request's entry (a
// replica that has seen that object come and go counts the entry no more)
// and the local one keeps with its hold (the view's events of another
// object of the name do not end it).
func WithObjectUID(ctx context.Context, uid string) context.Context {
	return context.WithValue(ctx, objectUID{}, uid)
}

func uidOf(ctx context.Context) string {
	uid, _ := ctx.Value(objectUID{}).(string)
	return uid
}

// StrictLedger implements Ledger on the API server: one ledger ConfigMap per
// tenant (configmap.go) holds the admitted creates not seen yet, written
// with optimistic concurrency, so that replicas never admit more creates
// between them than a quota has room for.
type StrictLedger struct {
	configMaps ConfigMaps
	view       Counter
	ttl        time.Duration
	now        func() time.Time
	// prefix starts the names of the ledger ConfigMaps (NamePrefix)
	prefix string
	// log receives the withdrawals that failed (WithdrawHolds)
	log *slog.Logger

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// NewStrictLedger returns a ledger keeping its ConfigMaps in configMaps (a
// namespace's), counting the objects view has seen. ttl bounds how long an
// admitted create holds its place unseen; DefaultReservationTTL when 0.
func NewStrictLedger(configMaps ConfigMaps, view Counter, ttl time.Duration) *StrictLedger {
	return &StrictLedger{configMaps: configMaps, view: view, ttl: ttlOr(ttl), now: time.Now, prefix: NamePrefix, locks: map[string]*sync.Mutex{}, log: slog.New(slog.DiscardHandler)}
}

// WithLogger has the ledger log the withdrawals that fail (WithdrawHolds);
// it returns l.
func (l *StrictLedger) WithLogger(log *slog.Logger) *StrictLedger {
	l.log = log
	return l
}

// withdrawTimeout bounds a refused request's withdrawal, which runs after
// the request's own time.
const withdrawTimeout = 5 * time.Second

// WithdrawHolds implements HoldWithdrawer: it withdraws each hold, and logs
// those it could not.
func (l *StrictLedger) WithdrawHolds(ctx context.Context, holds []Hold) {
	ctx, cancel := context.WithTimeout(ctx, withdrawTimeout)
	defer cancel()
	for _, hold := range holds {
		if w, ok := hold.(Withdrawer); ok {
			if err := w.Withdraw(ctx); err != nil {
				l.log.Warn("a refused request's entries in the quota ledgers are left to expire", "error", err.Error())
			}
		}
	}
}

// WithNamePrefix makes the ledger's ConfigMaps prefix + tenant instead of
// NamePrefix + tenant, so that two servers keeping ledgers in one namespace
// (two releases) keep apart; it returns l.
func (l *StrictLedger) WithNamePrefix(prefix string) *StrictLedger {
	l.prefix = prefix
	return l
}

// lock serializes this replica's creates of one tenant, so that only
// other replicas can make a write conflict.
func (l *StrictLedger) lock(tenant string) *sync.Mutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.locks[tenant]
	if m == nil {
		m = &sync.Mutex{}
		l.locks[tenant] = m
	}
	return m
}

// Reserve implements Ledger: it reads every tenant's ledger and counts the
// objects seen plus the admitted creates not seen yet.
func (l *StrictLedger) Reserve(ctx context.Context, c Claim, tenants []string) (map[string]int, Hold, error) {
	tenants = slices.Sorted(slices.Values(tenants))
	h := &strictHold{ledger: l, entry: entry{Key: c.Key, Namespace: c.Namespace, Name: c.Name, UID: uidOf(ctx)}}
	defer releaseOnPanic(h)
	for _, t := range tenants {
		m := l.lock(t)
		m.Lock()
		h.locked = append(h.locked, m)
	}
	counts := make(map[string]int, len(tenants))
	now := l.now()
	for _, t := range tenants {
		p, err := l.read(ctx, t, "")
		if err != nil {
			h.Release()
			return nil, nil, err
		}
		p.entries = slices.DeleteFunc(p.entries, func(e entry) bool { return now.After(e.Expires) })
		var claims []Pending
		for _, e := range p.entries {
			if x := e.claim(); x.Key == c.Key && x != c {
				claims = append(claims, Pending{Claim: x, UID: e.UID})
			}
		}
		counts[t] = l.view.CountUnseen(t, c.Key, claims)
		h.pages = append(h.pages, p)
	}
	return counts, h, nil
}

// ReserveUsage implements the strict mode for sums of resources: it reads
// the tenant's ledger of usage (its ledger's name with usageSuffix) and
// returns the tenant's sum of each key of adds, before adds: the objects
// seen plus the requests admitted (by any replica) whose objects are not
// seen yet with the usage they expect, this request's object at the most
// it may hold (as Reservation.TakeUsage counts it). c names the object
// under a UsageClaim key. Keep writes the request into the ledger,
// conditional on it being unchanged, in place of an earlier entry of the
// object; one not done yet (an update admitted and not seen) leaves its
// expected usage in the new entry's where larger. Withdraw then takes
// both away; it only follows a request refused or failed after its later
// holds (of counts), which a resize or expansion never takes: the earlier
// entry was a create of the same name, whose object, if stored, counts
// once the view sees it.
func (l *StrictLedger) ReserveUsage(ctx context.Context, c Claim, tenant string, adds, expect usage.List) (map[string]int64, Hold, error) {
	m := l.lock(tenant + usageSuffix)
	m.Lock()
	h := &strictHold{ledger: l, entry: entry{Key: c.Key, Namespace: c.Namespace, Name: c.Name, UID: uidOf(ctx), Expect: expect}, locked: []*sync.Mutex{m}}
	defer releaseOnPanic(h)
	p, err := l.read(ctx, tenant, usageSuffix)
	if err != nil {
		h.Release()
		return nil, nil, err
	}
	keys := make([]string, len(adds))
	for i, a := range adds {
		keys[i] = a.Key
	}
	now := l.now()
	p.entries = slices.DeleteFunc(p.entries, func(e entry) bool { return now.After(e.Expires) })
	var pending []PendingUsage
	for _, e := range p.entries {
		pu := PendingUsage{Claim: CountClaim(e.claim()), Expect: e.Expect, UID: e.UID}
		switch {
		case e.claim() != c:
			pending = append(pending, pu)
		case !l.view.Reached(pu):
			h.entry.Expect = h.entry.Expect.Max(e.Expect)
		}
	}
	// Replicas of earlier versions count an entry's Adds unless they see
	// its object with Expect: all of Expect, they count too much, never
	// too little.
	h.entry.Adds = h.entry.Expect
	pending = append(pending, PendingUsage{Claim: CountClaim(c), Expect: h.entry.Expect, UID: h.entry.UID})
	used := l.view.UsedUnseen(tenant, keys, pending)
	for _, a := range adds {
		used[a.Key] -= a.N
	}
	h.pages = []*page{p}
	return used, h, nil
}

// strictHold is a create's place while it is decided: the tenants' locks
// and the ledgers as read; once kept, the entries written.
type strictHold struct {
	ledger  *StrictLedger
	entry   entry
	locked  []*sync.Mutex
	pages   []*page
	once    sync.Once
	written []written
}

// written is an entry a hold wrote into the ledger of a tenant (and
// suffix).
type written struct {
	tenant, suffix string
	entry          entry
}

// Keep writes the claim into every tenant's ledger, each write conditional
// on the ledger being unchanged since it was read.
func (h *strictHold) Keep(ctx context.Context) error {
	for _, p := range h.pages {
		e, err := h.ledger.write(ctx, p, h.entry)
		if err != nil {
			return err
		}
		h.written = append(h.written, written{tenant: p.tenant, suffix: p.suffix, entry: e})
	}
	h.Release()
	return nil
}

// Withdraw implements Withdrawer: it removes the entries Keep wrote.
func (h *strictHold) Withdraw(ctx context.Context) error {
	var errs []error
	for _, w := range h.written {
		errs = append(errs, h.ledger.withdraw(ctx, w.tenant, w.suffix, w.entry.same))
	}
	return errors.Join(errs...)
}

// Release lets the tenants' next creates be decided.
func (h *strictHold) Release() {
	h.once.Do(func() {
		for _, m := range slices.Backward(h.locked) {
			m.Unlock()
		}
	})
}

// ReservationTTL is how long an admitted create holds its place unseen.
func (l *StrictLedger) ReservationTTL() time.Duration { return l.ttl }

// releaseOnPanic, deferred once a hold is made, releases it when the
// reservation panics (a bug in the view, say), which the handler recovers
// from: the hold's locks would otherwise stop every later request of its
// tenants, or of every host.
func releaseOnPanic(h Hold) {
	if r := recover(); r != nil {
		h.Release()
		panic(r)
	}
}
