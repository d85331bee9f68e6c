package hostname

import "strings"

// GatewayGroup is the Gateway API's group, whose routes read a wildcard
// host as a suffix of any number of labels.
const GatewayGroup = "gateway.networking.k8s.io"

// ExperimentalGatewayGroup is the group of the Gateway API's experimental
// kinds (XListenerSet), which read wildcards as its routes do.
const ExperimentalGatewayGroup = "gateway.networking.x-k8s.io"

// Wildcard reports whether a host is a wildcard ("*.example.com").
func Wildcard(host string) bool { return strings.HasPrefix(host, "*.") }

// AnyDepth reports whether the kinds of a group read a wildcard host as a
// suffix of any number of labels (the Gateway API's routes), not of one
// (an Ingress's *.example.com covers shop.example.com, not
// a.shop.example.com).
func AnyDepth(group string) bool { return group == GatewayGroup || group == ExperimentalGatewayGroup }

// Covers reports whether the wildcard host w, read with AnyDepth's
// semantics, covers the host e: an exact name under it, or a narrower
// wildcard (with any depth only: "*.shop" is a label of its own); not w
// itself.
func Covers(w string, anyDepth bool, e string) bool {
	suffix := w[1:] // ".example.com"
	if e == w || len(e) <= len(suffix) || !strings.HasSuffix(e, suffix) {
		return false
	}
	return anyDepth || !strings.Contains(e[:len(e)-len(suffix)], ".")
}

// Collide reports whether host a, served by a kind of group aGroup, and
// host b, of a kind of group bGroup, collide: they are the same name, or
// one is a wildcard covering the other as its own kind reads wildcards.
// The other may be a wildcard too: a route's *.example.com covers
// *.shop.example.com, whose holder would take those names' traffic; an
// Ingress's covers no other wildcard (one label).
func Collide(a, aGroup, b, bGroup string) bool {
	return a == b || Wildcard(a) && Covers(a, AnyDepth(aGroup), b) || Wildcard(b) && Covers(b, AnyDepth(bGroup), a)
}
