package clusterview

import (
	"slices"
	"strings"

	"github.com/tenantguard/tenantguard/internal/hostname"
)

// HostKind is a kind whose objects serve hosts: the hostname-collision
// rule's index holds their hosts. A Gateway is not one: it binds hosts,
// and its routes serve them.
type HostKind struct {
	Group, Kind string
	// Version is the version the exports replicate the kind at (the
	// server watches the one its API server prefers).
	Version string
	// Resource is the kind's resource (plural, lower case).
	Resource string
	// Paths are where an object of the kind keeps the hosts it serves,
	// field by field; "*" is every item of a list.
	Paths [][]string
	// Parent, when set, is where an object of the kind names the
	// namespace of the Gateway it attaches to: it serves its hosts only
	// on a Gateway of another namespace (a shared one), as a
	// ListenerSet's listeners bind hosts that its routes serve there. On
	// a Gateway of its own namespace it binds them for that Gateway's
	// address only, as the Gateway does.
	Parent []string
}

// gatewayGroup is the Gateway API's group.
const gatewayGroup = hostname.GatewayGroup

// hostKinds are the kinds that serve hosts. A holder names its kind by its
// index here, so that the index keeps one byte per holder for it.
var hostKinds = []HostKind{
	// An Ingress's TLS hosts name its certificate, not what it routes: a
	// shared wildcard certificate that every Ingress lists serves none
	// of them (the hostname rule judges the names a certificate may have).
	{Group: "networking.k8s.io", Kind: "Ingress", Version: "v1", Resource: "ingresses", Paths: [][]string{
		{"spec", "rules", "*", "host"},
	}},
	{Group: gatewayGroup, Kind: "HTTPRoute", Version: "v1", Resource: "httproutes", Paths: routeHostnames},
	{Group: gatewayGroup, Kind: "GRPCRoute", Version: "v1", Resource: "grpcroutes", Paths: routeHostnames},
	{Group: gatewayGroup, Kind: "TLSRoute", Version: "v1", Resource: "tlsroutes", Paths: routeHostnames},
	{Group: gatewayGroup, Kind: "ListenerSet", Version: "v1", Resource: "listenersets", Paths: listenerHostnames, Parent: listenerSetParent},
	// The experimental form ListenerSet replaced (Gateway API v1.3 to
	// v1.4), still served where those CRDs are installed.
	{Group: hostname.ExperimentalGatewayGroup, Kind: "XListenerSet", Version: "v1alpha1", Resource: "xlistenersets", Paths: listenerHostnames, Parent: listenerSetParent},
}

var (
	routeHostnames    = [][]string{{"spec", "hostnames", "*"}}
	listenerHostnames = [][]string{{"spec", "listeners", "*", "hostname"}}
	listenerSetParent = []string{"spec", "parentRef", "namespace"}
)

// HostKinds are the kinds that serve hosts: Ingress, HTTPRoute, GRPCRoute,
// TLSRoute, ListenerSet and XListenerSet.
func HostKinds() []HostKind { return slices.Clone(hostKinds) }

// hostKindIndex is the index of a kind in hostKinds.
func hostKindIndex(group, kind string) (uint8, bool) {
	for i, k := range hostKinds {
		if k.Group == group && k.Kind == kind {
			return uint8(i), true
		}
	}
	return 0, false
}

// ServesHosts reports whether objects of a kind serve hosts.
func ServesHosts(group, kind string) bool {
	_, ok := hostKindIndex(group, kind)
	return ok
}

// HostKindOf is the host kind of a group and kind; false for a kind that
// serves no hosts.
func HostKindOf(group, kind string) (HostKind, bool) {
	if i, ok := hostKindIndex(group, kind); ok {
		return hostKinds[i], true
	}
	return HostKind{}, false
}

// Hosts are the hosts an object of the kind in namespace serves,
// normalized; read appends the strings at a path of the object (as
// Paths and Parent name them) to into.
func (k HostKind) Hosts(namespace string, read func(path []string, into *[]string)) []string {
	if k.Parent != nil {
		var parent []string
		read(k.Parent, &parent)
		if len(parent) == 0 || parent[0] == "" || parent[0] == namespace {
			return nil
		}
	}
	var hosts []string
	for _, path := range k.Paths {
		read(path, &hosts)
	}
	return NormalizeHosts(hosts)
}

// NormalizeHosts is hosts as the index compares them: lower-cased, empty
// ones left out, each once, sorted. hosts is not modified.
func NormalizeHosts(hosts []string) []string {
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if h != "" {
			out = append(out, strings.ToLower(h))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// HostsOf are the hosts an object of a kind in namespace serves,
// normalized, from its decoded JSON (an unstructured object's content, a
// manifest); nil for a kind that serves none.
func HostsOf(group, kind, namespace string, obj map[string]any) []string {
	k, ok := HostKindOf(group, kind)
	if !ok {
		return nil
	}
	return k.Hosts(namespace, func(path []string, into *[]string) { collect(obj, path, into) })
}

// collect appends the strings at path under v.
func collect(v any, path []string, into *[]string) {
	if len(path) == 0 {
		if s, ok := v.(string); ok {
			*into = append(*into, s)
		}
		return
	}
	if path[0] == "*" {
		items, _ := v.([]any)
		for _, item := range items {
			collect(item, path[1:], into)
		}
		return
	}
	if m, ok := v.(map[string]any); ok {
		collect(m[path[0]], path[1:], into)
	}
}
