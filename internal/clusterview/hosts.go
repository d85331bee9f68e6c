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
	// Resource is the kind's resource (plural, lower case).
	Resource string
	// Paths are where an object of the kind keeps the hosts it serves,
	// field by field; "*" is every item of a list.
	Paths [][]string
}

// gatewayGroup is the Gateway API's group.
const gatewayGroup = hostname.GatewayGroup

// hostKinds are the kinds that serve hosts. A holder names its kind by its
// index here, so that the index keeps one byte per holder for it.
var hostKinds = []HostKind{
	// An Ingress's TLS hosts name its certificate, not what it routes: a
	// shared wildcard certificate that every Ingress lists serves none
	// of them (the hostname rule judges the names a certificate may have).
	{Group: "networking.k8s.io", Kind: "Ingress", Resource: "ingresses", Paths: [][]string{
		{"spec", "rules", "*", "host"},
	}},
	{Group: gatewayGroup, Kind: "HTTPRoute", Resource: "httproutes", Paths: routeHostnames},
	{Group: gatewayGroup, Kind: "GRPCRoute", Resource: "grpcroutes", Paths: routeHostnames},
	{Group: gatewayGroup, Kind: "TLSRoute", Resource: "tlsroutes", Paths: routeHostnames},
}

var routeHostnames = [][]string{{"spec", "hostnames", "*"}}

// HostKinds are the kinds that serve hosts: Ingress, HTTPRoute, GRPCRoute
// and TLSRoute.
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

// HostPaths are where objects of a kind keep the hosts they serve; nil for
// a kind that serves none.
func HostPaths(group, kind string) [][]string {
	if i, ok := hostKindIndex(group, kind); ok {
		return hostKinds[i].Paths
	}
	return nil
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

// HostsOf are the hosts an object of a kind serves, normalized, from its
// decoded JSON (an unstructured object's content, a manifest); nil for a
// kind that serves none.
func HostsOf(group, kind string, obj map[string]any) []string {
	paths := HostPaths(group, kind)
	if paths == nil {
		return nil
	}
	var hosts []string
	for _, path := range paths {
		collect(obj, path, &hosts)
	}
	return NormalizeHosts(hosts)
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
