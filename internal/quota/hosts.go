package quota

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tenantguard/tenantguard/internal/hostname"
)

// HostClaim is an object that serves a host, as the strict ledger of hosts
// keeps the Ingresses and routes admitted by any replica and not seen yet.
// Tenant is the tenant of its namespace, "" for none (or for an entry
// written before the field).
type HostClaim struct {
	Host, Group, Kind, Namespace, Name, Tenant string
}

// hostEntry is a HostClaim in the ledger, until it expires.
type hostEntry struct {
	Host      string    `json:"host"`
	Group     string    `json:"group,omitempty"`
	Kind      string    `json:"kind"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Expires   time.Time `json:"expires"`
	// UID is the uid of the object the request creates or changes
	// (WithObjectUID), "" when unknown: a ledger written before the field.
	UID string `json:"uid,omitempty"`
	// Tenant is the tenant of Namespace, "" for none: MostHostsHeld
	// bounds each tenant's entries.
	Tenant string `json:"tenant,omitempty"`
}

func (e hostEntry) claim() HostClaim {
	return HostClaim{Host: e.Host, Group: e.Group, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name, Tenant: e.Tenant}
}

// HostConflict is a claim in the ledger of hosts that collides with a host
// a request asks for (hostname.Collide): on that host, on a wildcard
// covering it, or on a host under it.
type HostConflict struct {
	// Asked is the request's host the claim collides with.
	Asked string
	HostClaim
}

// sameObject reports whether two claims name one object (whatever host).
func sameObject(a, b HostClaim) bool {
	return a.Group == b.Group && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
}

// hostsLedger follows the ledgers' name prefix in the name of the ledger of
// hosts: it holds a dot, which no tenant name (a DNS label) does, so it is
// never a tenant's ledger.
const hostsLedger = "hosts.edge"

// HostSeer is what the strict ledger of hosts needs of the cluster view
// (clusterview.View): whether the informers have seen a claim's object
// serve its host (it then holds the host as an object, no longer as a
// claim), or seen that object, by its uid, come and go (a claim then holds
// nothing: the host is free again).
type HostSeer interface {
	SeenHost(c HostClaim, uid string) bool
}

// ReserveHosts implements the strict mode for hosts: it reads the ledger of
// hosts (one ConfigMap, shared by every replica) and returns the claims
// that other objects than self's hold there on hosts colliding with hosts
// (the same host, a wildcard covering it or a host under it), admitted by
// any replica and not seen by this one's view yet. The hold keeps this replica's other
// Ingress and route requests waiting until it is kept or released; Keep
// writes self's hosts into the ledger, conditional on it being unchanged
// since it was read (ErrStale otherwise: the request must be decided again).
// kept are the hosts among hosts that an update's object served before it,
// which every replica's view has: Keep claims none of them. self's Host is
// not read. Read the view's index after it: a claim skipped
// here as seen is then in the index, whichever the informer's timing. A
// request that would take self's tenant past MostHostsHeld entries (those
// of other objects and the hosts it would add) holds nothing and is a
// *TooManyHostsError.
func (l *StrictLedger) ReserveHosts(ctx context.Context, self HostClaim, hosts, kept []string) ([]HostConflict, Hold, error) {
	m := l.lock(hostsLedger)
	m.Lock()
	h := &strictHostHold{ledger: l, self: self, hosts: hosts, kept: kept, locked: m}
	defer releaseOnPanic(h)
	p, err := l.readHosts(ctx)
	if err != nil {
		h.Release()
		return nil, nil, err
	}
	h.page = p
	if err := tenantRoom(ctx, p, self, hosts, kept); err != nil {
		h.Release()
		return nil, nil, err
	}
	seer, _ := l.view.(HostSeer)
	var held []HostConflict
	for _, e := range p.entries {
		c := e.claim()
		if sameObject(c, self) {
			continue
		}
		var asked []string
		for _, host := range hosts {
			if hostname.Collide(c.Host, c.Group, host, self.Group) {
				asked = append(asked, host)
			}
		}
		if len(asked) == 0 || (seer != nil && seer.SeenHost(c, e.UID)) {
			continue
		}
		for _, host := range asked {
			held = append(held, HostConflict{Asked: host, HostClaim: c})
		}
	}
	return held, h, nil
}

// tenantRoom is a *TooManyHostsError when the hosts self would add (those
// writeHosts adds) would take its tenant's entries, as writeHosts leaves
// them, past MostHostsHeld, or
// past MostHostBytes of the ledger; nil for an object of no tenant.
func tenantRoom(ctx context.Context, p *hostsPage, self HostClaim, hosts, kept []string) error {
	if self.Tenant == "" {
		return nil
	}
	mine := mineOf(ctx, self)
	held, bytes := 0, 0
	for _, e := range p.entries {
		// self's own entries it still asks for stay, and are held too
		if e.Tenant == self.Tenant && (!mine(e) || slices.Contains(hosts, e.Host)) {
			held, bytes = held+1, bytes+e.size()
		}
	}
	added := additions(ctx, p.entries, self, hosts, kept, time.Time{})
	asked, askedBytes := len(added), 0
	for _, e := range added {
		askedBytes += e.size()
	}
	switch {
	case asked == 0:
		return nil
	case held+asked > MostHostsHeld:
		return &TooManyHostsError{Tenant: self.Tenant, Held: held, Asked: asked, Most: MostHostsHeld}
	case bytes+askedBytes > MostHostBytes:
		return &TooManyHostsError{Tenant: self.Tenant, Held: held, Asked: asked, Bytes: bytes, AskedBytes: askedBytes, MostBytes: MostHostBytes}
	}
	return nil
}

// size is about what e takes in the ledger's JSON: its strings, and 120
// bytes of keys, quotes and its expiry.
func (e hostEntry) size() int {
	return 120 + len(e.Host) + len(e.Group) + len(e.Kind) + len(e.Namespace) + len(e.Name) + len(e.UID) + len(e.Tenant)
}

// mineOf tells self's entries: of its uid (WithObjectUID), or of none
// (written before entries had uids). An entry of another object of self's
// name (one deleted, or the one a create of a name taken will fail on) is
// its own, until it expires or the view sees its object come and go.
func mineOf(ctx context.Context, self HostClaim) func(hostEntry) bool {
	uid := uidOf(ctx)
	return func(e hostEntry) bool { return sameObject(e.claim(), self) && (e.UID == uid || e.UID == "") }
}

// additions are the entries self's request adds to entries, expiring at
// expires: one for each of hosts it neither kept nor claims already.
func additions(ctx context.Context, entries []hostEntry, self HostClaim, hosts, kept []string, expires time.Time) []hostEntry {
	mine, uid := mineOf(ctx, self), uidOf(ctx)
	var added []hostEntry
	for _, host := range hosts {
		if slices.Contains(kept, host) || slices.ContainsFunc(entries, func(e hostEntry) bool { return mine(e) && e.Host == host }) {
			continue
		}
		added = append(added, hostEntry{Host: host, Group: self.Group, Kind: self.Kind, Namespace: self.Namespace, Name: self.Name, Expires: expires, UID: uid, Tenant: self.Tenant})
	}
	return added
}

// hostsPage is the ledger of hosts as read, its expired entries left out.
type hostsPage struct {
	cm      *corev1.ConfigMap // nil when it does not exist yet
	entries []hostEntry
}

func (l *StrictLedger) readHosts(ctx context.Context) (*hostsPage, error) {
	cm, err := l.get(ctx, hostsLedger)
	if err != nil {
		return nil, fmt.Errorf("reading the ledger of hosts: %w", err)
	}
	p := &hostsPage{cm: cm, entries: entriesOf[hostEntry](cm)}
	now := l.now()
	p.entries = slices.DeleteFunc(p.entries, func(e hostEntry) bool { return now.After(e.Expires) })
	return p, nil
}

// writeHosts stores the page with self's entries of hosts it no longer asks
// for dropped and entries added for the hosts it asks for that it neither
// claims already nor kept (an update that keeps its hosts, the most
// frequent request, adds none), and returns the entries added; a write
// that lost a race is ErrStale. Nothing changed, nothing is written.
func (l *StrictLedger) writeHosts(ctx context.Context, p *hostsPage, self HostClaim, hosts, kept []string) ([]hostEntry, error) {
	mine := mineOf(ctx, self)
	entries := slices.DeleteFunc(slices.Clone(p.entries), func(e hostEntry) bool {
		return mine(e) && !slices.Contains(hosts, e.Host)
	})
	dropped := len(entries) != len(p.entries)
	added := additions(ctx, entries, self, hosts, kept, l.now().Add(l.ttl).UTC())
	if !dropped && len(added) == 0 {
		return nil, nil
	}
	return added, l.putHosts(ctx, p, append(entries, added...))
}

// putHosts stores entries as the ledger of hosts read as p; a write that
// lost a race is ErrStale.
func (l *StrictLedger) putHosts(ctx context.Context, p *hostsPage, entries []hostEntry) error {
	raw, err := json.Marshal(entries)
	if err != nil {
		return err
	}
	if err = l.put(ctx, p.cm, hostsLedger, "", raw); err != nil && !errors.Is(err, ErrStale) {
		return fmt.Errorf("writing the ledger of hosts: %w", err)
	}
	return err
}

// strictHostHold is a request's hold on the ledger of hosts while it is
// decided.
type strictHostHold struct {
	ledger *StrictLedger
	self   HostClaim
	hosts  []string
	kept   []string
	locked interface{ Unlock() }
	page   *hostsPage
	done   bool
	// added are the entries Keep wrote
	added []hostEntry
}

// Keep writes the request's hosts into the ledger, conditional on it being
// unchanged since it was read.
func (h *strictHostHold) Keep(ctx context.Context) error {
	defer h.Release()
	added, err := h.ledger.writeHosts(ctx, h.page, h.self, h.hosts, h.kept)
	if err == nil {
		h.added = append(h.added, added...)
	}
	return err
}

// Withdraw implements Withdrawer: it removes the entries Keep added.
func (h *strictHostHold) Withdraw(ctx context.Context) error {
	if len(h.added) == 0 {
		return nil
	}
	err := h.ledger.rewrite(hostsLedger, func() error {
		p, err := h.ledger.readHosts(ctx)
		if err != nil {
			return err
		}
		// Tenant left out: a replica of an earlier version writes
		// the ledger back without it.
		kept := slices.DeleteFunc(slices.Clone(p.entries), func(e hostEntry) bool {
			return slices.ContainsFunc(h.added, func(a hostEntry) bool {
				return sameObject(a.claim(), e.claim()) && a.Host == e.Host && a.Expires.Equal(e.Expires)
			})
		})
		if len(kept) == len(p.entries) {
			return nil
		}
		return h.ledger.putHosts(ctx, p, kept)
	})
	if err != nil {
		return fmt.Errorf("withdrawing from the ledger of hosts: %w", err)
	}
	return nil
}

// Release lets this replica's next Ingress or route request be decided.
func (h *strictHostHold) Release() {
	if !h.done {
		h.done = true
		h.locked.Unlock()
	}
}
