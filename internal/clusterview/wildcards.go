package clusterview

import (
	"slices"
	"strings"

	"github.com/tenantguard/tenantguard/internal/hostname"
)

// Wildcard hosts collide with the names under them: an exact host (or a
// narrower wildcard) taken under another object's wildcard would take
// those names' traffic, as controllers prefer the more specific host. An Ingress's *.example.com
// covers one label (shop.example.com, not a.shop.example.com); a Gateway
// API route's covers any number of them (its hostnames are suffix matches).

// match is a holder of a host that collides with the one asked about: via
// is the host it serves or holds when not that one (a wildcard covering the
// host asked about, or a host under a wildcard asked about; either may be a
// narrower wildcard).
type match struct {
	holder
	via string
}

// anyDepth reports whether the holder's kind reads a wildcard host as a
// suffix of any number of labels (the Gateway API's routes), not of one.
func (h holder) anyDepth() bool { return hostname.AnyDepth(hostKinds[h.kind].Group) }

// wildcardsOver appends the holders, other than self, of the wildcards that
// cover the host e, an exact one or a narrower wildcard; the caller holds
// x.mu.
func (x *hostIndex) wildcardsOver(e string, self holder, listed *matches) {
	for i := strings.IndexByte(e, '.'); i >= 0 && i < len(e)-1; {
		w := "*" + e[i:]
		for _, h := range x.holders(w, self) {
			if hostname.Covers(w, h.anyDepth(), e) {
				listed.add(h, w)
			}
		}
		next := strings.IndexByte(e[i+1:], '.')
		if next < 0 {
			break
		}
		i += next + 1
	}
}

// hostsUnder appends the holders, other than self, of the hosts the
// wildcard w asked about by self covers (exact ones, and narrower wildcards
// when self's kind reads w at any depth): a pass over every host, which only
// requests for wildcard hosts make; the caller holds x.mu.
func (x *hostIndex) hostsUnder(w string, self holder, listed *matches) {
	anyDepth := self.anyDepth()
	under := func(e string) {
		if hostname.Covers(w, anyDepth, e) {
			for _, h := range x.holders(e, self) {
				listed.add(h, e)
			}
		}
	}
	for e := range x.sole {
		under(e)
	}
	for e := range x.held {
		if _, served := x.sole[e]; !served { // its holders are listed with the object's
			under(e)
		}
	}
}

// matches lists holders once each, found in any order: a holder found via
// several hosts is listed via the least, so that denials do not depend on
// the index's order. A few are looked up in the list; a wildcard over a
// shared domain finds 10,000s, which an index keeps from taking a scan each.
type matches struct {
	list []match
	at   map[holder]int
}

// indexFrom is how many holders make matches index them.
const indexFrom = 16

// add lists h, found via host ("" for the host asked about).
func (m *matches) add(h holder, via string) {
	i, ok := m.find(h)
	if ok {
		if m.list[i].via != "" && via < m.list[i].via {
			m.list[i].via = via
		}
		return
	}
	m.list = append(m.list, match{h, via})
	switch {
	case m.at != nil:
		m.at[h] = len(m.list) - 1
	case len(m.list) == indexFrom:
		m.at = make(map[holder]int, 2*indexFrom)
		for i, l := range m.list {
			m.at[l.holder] = i
		}
	}
}

// find is where h is listed.
func (m *matches) find(h holder) (int, bool) {
	if m.at != nil {
		i, ok := m.at[h]
		return i, ok
	}
	i := slices.IndexFunc(m.list, func(l match) bool { return l.holder == h })
	return i, i >= 0
}
