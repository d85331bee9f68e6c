package clusterview

import (
	"slices"
	"strings"
	"time"
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

// ReserveHosts holds hosts for the object h names while its request is
// decided, and returns what HostHolders returns, read in the same step: of
// parallel requests for one host, each sees the holds of those before it.
// ttl bounds how long an admitted request holds its hosts unseen.
func (v *View) ReserveHosts(h Holder, hosts []string, ttl time.Duration) (map[string][]HostHolder, *HostHold) {
	kind, ok := hostKindIndex(h.Group, h.Kind)
	if !ok || len(hosts) == 0 {
		return nil, &HostHold{}
	}
	// The index's own copies, made before the lock: the request's strings
	// share its whole body, and the hold outlives it.
	self := holder{namespace: strings.Clone(h.Namespace), name: strings.Clone(h.Name), kind: kind}
	own := make([]string, len(hosts))
	for i, host := range hosts {
		own[i] = strings.Clone(host)
	}
	hold := &hostHold{holder: self, hosts: own}
	return v.withTenants(v.hosts.hold(hold, hosts, ttl)), &HostHold{view: v, hold: hold, ttl: ttl}
}

// hold finds the holders of hosts other than hold's and puts hold in the
// index, in one step.
func (x *hostIndex) hold(hold *hostHold, hosts []string, ttl time.Duration) map[string][]match {
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.now()
	x.expire(now)
	found := x.lookup(hold.holder, hosts)
	hold.expires = now.Add(ttl)
	x.byHolder[hold.holder] = append(x.byHolder[hold.holder], hold)
	for _, host := range hold.hosts {
		x.held[host] = append(x.held[host], hold)
	}
	return found
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
			}
		}
		if len(hold.hosts) == 0 {
			x.drop(hold)
		}
	}
}

// drop ends a hold; the caller holds x.mu. Dropping it twice is harmless.
func (x *hostIndex) drop(hold *hostHold) {
	for _, host := range hold.hosts {
		x.unhold(host, hold)
	}
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
