package clusterview

import (
	"cmp"

	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tenantguard/tenantguard/internal/hostname"
	"github.com/tenantguard/tenantguard/internal/quota"
)

// Holder names an object that serves a host, or whose create or update
// holds one while it is decided: its kind and where it is.
type Holder struct {
	Group, Kind, Namespace, Name string
}

// HostHolder is a holder with its namespace's tenant ("" for a namespace of
// no tenant, or one the view has not seen), and the host it serves or
// holds when not the one asked about: a wildcard covering it, or a host
// under it (wildcards.go).
type HostHolder struct {
	Holder
	Tenant string
	Host   string
}

// holder is a Holder as the index keeps it: its kind as an index into
// hostKinds (so the group and kind cost one byte), its namespace the view's
// own copy of the namespace's name when the view has seen it (shared by
// every holder in the namespace), and its name.
type holder struct {
	namespace, name string
	kind            uint8
}

// public is h as a Holder.
func (h holder) public() Holder {
	k := hostKinds[h.kind]
	return Holder{Group: k.Group, Kind: k.Kind, Namespace: h.namespace, Name: h.name}
}

// hostIndex is the hosts the objects of the view serve, and the holds of
// the requests being decided or admitted and not seen yet. A cluster has
// 10,000s of Ingresses and routes, nearly each serving its own hosts: a
// host's only holder is kept in sole, inline, and the rare further ones
// (hosts served twice: in a scope that allows it, or from before the rule)
// in more. Nothing of an object but its kind, namespace, name and hosts is
// kept; an object's hosts are not kept apart from the index, as its
// informer hands its old hosts back with every change (View.UpdateHosts).
type hostIndex struct {
	mu   sync.Mutex
	sole map[string]holder
	more map[string][]holder
	// holds are the requests' reservations, by host and by holder.
	held     map[string][]*hostHold
	byHolder map[holder][]*hostHold
	// heldBy is how many hosts each tenant's holds hold (HoldOptions).
	heldBy map[string]int
	// nextExpiry is when expire next looks for holds whose time is up.
	nextExpiry time.Time
	now        func() time.Time
}

func newHostIndex() *hostIndex {
	return &hostIndex{
		sole: map[string]holder{}, more: map[string][]holder{},
		held: map[string][]*hostHold{}, byHolder: map[holder][]*hostHold{}, heldBy: map[string]int{},
		now: time.Now,
	}
}

// add indexes h as serving host; the caller holds x.mu.
func (x *hostIndex) add(host string, h holder) {
	first, ok := x.sole[host]
	switch {
	case !ok:
		x.sole[strings.Clone(host)] = h
	case first == h || slices.Contains(x.more[host], h):
	default:
		x.more[host] = append(x.more[host], h)
	}
}

// remove drops h from host's holders; the caller holds x.mu.
func (x *hostIndex) remove(host string, h holder) {
	first, ok := x.sole[host]
	if !ok {
		return
	}
	rest := x.more[host]
	if first == h {
		if len(rest) == 0 {
			delete(x.sole, host)
			return
		}
		x.sole[host] = rest[0]
		rest = rest[1:]
	} else {
		i := slices.Index(rest, h)
		if i < 0 {
			return
		}
		rest = slices.Delete(slices.Clone(rest), i, i+1)
	}
	if len(rest) == 0 {
		delete(x.more, host)
	} else {
		x.more[host] = rest
	}
}

// holders are host's holders other than except: the objects serving
// it, then the requests holding it; the caller holds x.mu.
func (x *hostIndex) holders(host string, except holder) []holder {
	var into []holder
	if first, ok := x.sole[host]; ok {
		if first != except {
			into = append(into, first)
		}
		for _, h := range x.more[host] {
			if h != except {
				into = append(into, h)
			}
		}
	}
	for _, hold := range x.held[host] {
		if hold.holder != except && !slices.Contains(into, hold.holder) {
			into = append(into, hold.holder)
		}
	}
	return into
}

// UpdateHosts keeps the host index in step with an informer: old is the
// object as the view was last given it (nil when new), o as it is now (nil
// when deleted); each carries its kind, namespace, name and Hosts. An
// object seen takes over its request's holds of the hosts it serves.
func (v *View) UpdateHosts(old, o *Object) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.updateHosts(old, o)
}

// updateHosts is UpdateHosts; the caller holds v.mu for writing.
func (v *View) updateHosts(old, o *Object) {
	switch {
	case old == nil && o != nil:
		v.arrived(v.hostVisitID(o.Group, o.Kind, o.Namespace, o.Name), o.UID)
	case old != nil && o == nil:
		v.left(v.hostVisitID(old.Group, old.Kind, old.Namespace, old.Name))
	}
	x := v.hosts
	x.mu.Lock()
	defer x.mu.Unlock()
	if old != nil {
		if h, ok := v.holderOf(old, false); ok {
			for _, host := range old.Hosts {
				if o == nil || !sameObject(old, o) || !slices.Contains(o.Hosts, host) {
					x.remove(host, h)
				}
			}
		}
	}
	if o == nil {
		return
	}
	h, ok := v.holderOf(o, true)
	if !ok {
		return
	}
	for _, host := range o.Hosts {
		x.add(host, h)
	}
	x.takeOver(h, o.Hosts)
}

func sameObject(a, b *Object) bool {
	return a.Group == b.Group && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
}

// holderOf is an object as the index keeps it; not ok for a kind that
// serves no hosts. With keep its strings are the index's own (the
// caller's may share a whole object's memory); without, it serves only
// to compare. The caller holds v.mu.
func (v *View) holderOf(o *Object, keep bool) (holder, bool) {
	kind, ok := hostKindIndex(o.Group, o.Kind)
	if !ok {
		return holder{}, false
	}
	h := holder{namespace: o.Namespace, name: o.Name, kind: kind}
	if keep {
		if ns := v.namespaces[h.namespace]; ns != nil {
			h.namespace = ns.name // shared by the namespace's holders
		} else {
			h.namespace = strings.Clone(h.namespace)
		}
		h.name = strings.Clone(h.name)
	}
	return h, true
}

// HostHolders returns, for each of hosts that another object serves or
// another request holds, those holders, sorted; h (the request's own
// object) is never among them. It holds nothing: ReserveHosts does.
func (v *View) HostHolders(h Holder, hosts []string) map[string][]HostHolder {
	self, ok := toHolder(h)
	if !ok {
		return nil
	}
	return v.withTenants(v.hosts.holdersOf(self, hosts))
}

// holdersOf is lookup, expired holds dropped first, under the index's lock.
func (x *hostIndex) holdersOf(self holder, hosts []string) map[string][]match {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.expire(x.now())
	return x.lookup(self, hosts)
}

// toHolder is h as the index keeps it, for comparisons only (its strings
// are not copied).
func toHolder(h Holder) (holder, bool) {
	kind, ok := hostKindIndex(h.Group, h.Kind)
	return holder{namespace: h.Namespace, name: h.Name, kind: kind}, ok
}

// lookup gathers the holders of hosts other than self, and those of the
// hosts a wildcard among them covers or that cover one of them (wildcards.go);
// the caller holds x.mu.
func (x *hostIndex) lookup(self holder, hosts []string) map[string][]match {
	var found map[string][]match
	for _, host := range hosts {
		var listed matches
		for _, h := range x.holders(host, self) {
			listed.add(h, "")
		}
		if hostname.Wildcard(host) {
			x.hostsUnder(host, self, &listed)
		}
		x.wildcardsOver(host, self, &listed)
		if ms := listed.list; len(ms) > 0 {
			if found == nil {
				found = make(map[string][]match, len(hosts))
			}
			found[host] = ms
		}
	}
	return found
}

// withTenants adds each holder's tenant, and sorts each host's holders.
func (v *View) withTenants(found map[string][]match) map[string][]HostHolder {
	if len(found) == 0 {
		return nil
	}
	out := make(map[string][]HostHolder, len(found))
	v.mu.RLock()
	defer v.mu.RUnlock()
	for host, hs := range found {
		list := make([]HostHolder, len(hs))
		for i, h := range hs {
			list[i] = HostHolder{Holder: h.public(), Tenant: v.tenantOf(h.namespace), Host: h.via}
		}
		slices.SortFunc(list, func(a, b HostHolder) int {
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
		})
		out[host] = list
	}
	return out
}

// HostCount is how many hosts the view's objects serve.
func (v *View) HostCount() int {
	v.hosts.mu.Lock()
	defer v.hosts.mu.Unlock()
	return len(v.hosts.sole)
}

// hostVisitID is the id under which the view remembers the visits of an
// object that serves hosts (RememberVisits): a claim of a key no quota key
// is.
func (v *View) hostVisitID(group, kind, namespace, name string) objectID {
	return v.id(hostVisitClaim(group, kind, namespace, name))
}

// hostVisitClaim is the claim hostVisitID identifies.
func hostVisitClaim(group, kind, namespace, name string) quota.Claim {
	return quota.Claim{Key: "hosts:" + group + "/" + kind, Namespace: namespace, Name: name}
}

// SeenHost reports whether the view accounts for a claim of the strict
// ledger of hosts (package quota) by itself: it has seen the object the
// claim names serve the claim's host, or, by uid (the entry's, "" when
// unknown), seen that object come and go.
func (v *View) SeenHost(c quota.HostClaim, uid string) bool {
	h, ok := toHolder(Holder{Group: c.Group, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name})
	if !ok {
		return false
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.cameAndWent(quota.Pending{Claim: hostVisitClaim(c.Group, c.Kind, c.Namespace, c.Name), UID: uid}) {
		return true
	}
	x := v.hosts
	x.mu.Lock()
	defer x.mu.Unlock()
	if first, served := x.sole[c.Host]; served && first == h {
		return true
	}
	return slices.Contains(x.more[c.Host], h)
}
