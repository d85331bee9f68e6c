package clusterview

import (
	"slices"
	"strings"
	"time"

	"github.com/tenantguard/tenantguard/internal/quota"
)

// hostHold is a request's reservation of the hosts its object will serve,
// as the quota's reservations hold a place in a count (package quota): taken
// before the request is decided, so that of parallel requests for one host
// each sees the ones before it; given back when the request is refused;
// kept, when it is admitted, until the informer sees the object serve the
// host or the hold expires. Each decision holds its own (a retried request
// holds twice, as one holder), so that a refused update never leaves the
// hosts it asked for in the hold of an earlier, admitted one.
type hostHold struct {
	holder holder
	hosts  []string
	// tenant is the tenant of the holder's namespace ("" for none), and
	// served the hosts among hosts its object served before the request:
	// the tenant's count of hosts held counts the others.
	tenant string
	served []string
	// kept is set once the decision admitted the request.
	kept    bool
	expires time.Time
}

// HostHold is a request's hold of its hosts. Call exactly one of Keep and
// Release once the request is decided.
type HostHold struct {
	view *View
	hold *hostHold
	ttl  time.Duration
}

// HoldOptions say how a request holds its hosts.
type HoldOptions struct {
	// TTL bounds how long an admitted request holds its hosts unseen.
	TTL time.Duration
	// Tenant is the tenant of the object's namespace, "" for none, and
	// Served the hosts asked for that the object served before the
	// request (an update's). With Most above 0, the hosts a tenant's
	// requests hold, Served left out, stay within Most: a request that
	// would take them past it holds nothing (quota.TooManyHostsError).
	// Namespaces of no tenant have no bound.
	Tenant string
	Served []string
	Most   int
}

// ReserveHosts holds hosts for the object h names while its request is
// decided, and returns what HostHolders returns, read in the same step: of
// parallel requests for one host, each sees the holds of those before it.
// A request that would take its tenant past o.Most holds nothing and is a
// *quota.TooManyHostsError.
func (v *View) ReserveHosts(h Holder, hosts []string, o HoldOptions) (map[string][]HostHolder, *HostHold, error) {
	kind, ok := hostKindIndex(h.Group, h.Kind)
	if !ok || len(hosts) == 0 {
		return nil, &HostHold{}, nil
	}
	// The index's own copies, made before the lock: the request's strings
	// share its whole body, and the hold outlives it.
	self := holder{namespace: strings.Clone(h.Namespace), name: strings.Clone(h.Name), kind: kind}
	own := make([]string, len(hosts))
	for i, host := range hosts {
		own[i] = strings.Clone(host)
	}
	hold := &hostHold{holder: self, hosts: own, tenant: strings.Clone(o.Tenant), served: slices.Clone(o.Served)}
	found, err := v.hosts.hold(hold, hosts, o)
	if err != nil {
		return nil, nil, err
	}
	return v.withTenants(found), &HostHold{view: v, hold: hold, ttl: o.TTL}, nil
}

// hold finds the holders of hosts other than hold's and puts hold in the
// index, in one step, unless it would take its tenant past o.Most.
func (x *hostIndex) hold(hold *hostHold, hosts []string, o HoldOptions) (map[string][]match, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.now()
	x.expire(now)
	fresh := hold.fresh()
	if held := x.heldBy[hold.tenant]; o.Most > 0 && fresh > 0 && held+fresh > o.Most {
		return nil, &quota.TooManyHostsError{Tenant: hold.tenant, Held: held, Asked: fresh, Most: o.Most}
	}
	found := x.lookup(hold.holder, hosts)
	hold.expires = now.Add(o.TTL)
	x.byHolder[hold.holder] = append(x.byHolder[hold.holder], hold)
	for _, host := range hold.hosts {
		x.held[host] = append(x.held[host], hold)
	}
	x.count(hold.tenant, fresh)
	return found, nil
}

// counts reports whether the hold of host counts in its tenant's hosts
// held: one of a tenant's, its object did not serve before.
func (h *hostHold) counts(host string) bool {
	return h.tenant != "" && !slices.Contains(h.served, host)
}

// fresh is how many of its hosts the hold counts in its tenant's hosts held.
func (h *hostHold) fresh() int {
	n := 0
	for _, host := range h.hosts {
		if h.counts(host) {
			n++
		}
	}
	return n
}

// count adds n to the hosts tenant's requests hold; the caller holds x.mu.
func (x *hostIndex) count(tenant string, n int) {
	if n == 0 {
		return
	}
	if x.heldBy[tenant] += n; x.heldBy[tenant] <= 0 {
		delete(x.heldBy, tenant)
	}
}

// Keep marks the request admitted: its hosts stay held until the informer
// sees the object serve them, or the hold expires.
func (r *HostHold) Keep() {
	if r.view == nil {
		return
	}
	x := r.view.hosts
	x.mu.Lock()
	defer x.mu.Unlock()
	r.hold.kept = true
	r.hold.expires = x.now().Add(r.ttl)
}

// Release gives the hosts back: the request was refused, or not decided.
func (r *HostHold) Release() {
	if r.view == nil {
		return
	}
	x := r.view.hosts
	x.mu.Lock()
	defer x.mu.Unlock()
	if !r.hold.kept {
		x.drop(r.hold)
	}
}

// ReservedHosts is how many holds of hosts requests have: being decided,
// or admitted and not seen yet (past its TTL, a hold counts no more).
func (v *View) ReservedHosts() int {
	v.hosts.mu.Lock()
	defer v.hosts.mu.Unlock()
	v.hosts.expire(v.hosts.now())
	n := 0
	for _, holds := range v.hosts.byHolder {
		n += len(holds)
	}
	return n
}

// takeOver ends h's holds of the hosts its object, now seen, serves; the
// caller holds x.mu.
func (x *hostIndex) takeOver(h holder, served []string) {
	for _, hold := range x.byHolder[h] {
		for _, host := range served {
			if i := slices.Index(hold.hosts, host); i >= 0 {
				hold.hosts = slices.Delete(hold.hosts, i, i+1)
				x.unhold(host, hold)
				if hold.counts(host) {
					x.count(hold.tenant, -1)
				}
			}
		}
		if len(hold.hosts) == 0 {
			x.drop(hold)
		}
	}
}

// drop ends a hold; the caller holds x.mu. Dropping it twice is harmless:
// the hold holds no host after the first.
func (x *hostIndex) drop(hold *hostHold) {
	x.count(hold.tenant, -hold.fresh())
	for _, host := range hold.hosts {
		x.unhold(host, hold)
	}
	hold.hosts = nil
	holds := slices.DeleteFunc(slices.Clone(x.byHolder[hold.holder]), func(o *hostHold) bool { return o == hold })
	if len(holds) == 0 {
		delete(x.byHolder, hold.holder)
	} else {
		x.byHolder[hold.holder] = holds
	}
}

// unhold takes hold off host's holds; the caller holds x.mu.
func (x *hostIndex) unhold(host string, hold *hostHold) {
	holds := slices.DeleteFunc(x.held[host], func(o *hostHold) bool { return o == hold })
	if len(holds) == 0 {
		delete(x.held, host)
	} else {
		x.held[host] = holds
	}
}

// expire ends the holds whose time is up, at most once a second; the
// caller holds x.mu. Until then an expired hold still counts, which can
// only refuse a request, never admit one wrongly.
func (x *hostIndex) expire(now time.Time) {
	if now.Before(x.nextExpiry) {
		return
	}
	x.nextExpiry = now.Add(time.Second)
	var expired []*hostHold
	for _, holds := range x.byHolder {
		for _, hold := range holds {
			if now.After(hold.expires) {
				expired = append(expired, hold)
			}
		}
	}
	for _, hold := range expired {
		x.drop(hold)
	}
}
