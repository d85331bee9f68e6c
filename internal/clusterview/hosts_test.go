package clusterview

import (
	"slices"
	"strings"
	"testing"
)

func TestHostsOfAnObjectAreWhereItsKindServesThem(t *testing.T) {
	listenerSet := func(parent map[string]any) map[string]any {
		return map[string]any{"spec": map[string]any{"parentRef": parent, "listeners": []any{
			map[string]any{"name": "a", "hostname": "Shop.oil.example.com"},
			map[string]any{"name": "b", "hostname": "*.oil.example.com"},
			map[string]any{"name": "c"},
		}}}
	}
	tests := []struct {
		name, kind string
		obj        map[string]any
		want       []string
	}{
		{"a ListenerSet on another namespace's Gateway serves its listeners' hosts", "ListenerSet",
			listenerSet(map[string]any{"name": "shared", "namespace": "infra"}), []string{"*.oil.example.com", "shop.oil.example.com"}},
		{"so does an XListenerSet, of the experimental group", "gateway.networking.x-k8s.io/XListenerSet",
			listenerSet(map[string]any{"name": "shared", "namespace": "infra"}), []string{"*.oil.example.com", "shop.oil.example.com"}},
		{"an XListenerSet of the standard group is no kind that serves hosts", "XListenerSet",
			listenerSet(map[string]any{"name": "shared", "namespace": "infra"}), nil},
		{"an XListenerSet on its own namespace's Gateway serves none", "gateway.networking.x-k8s.io/XListenerSet", listenerSet(map[string]any{"name": "own"}), nil},
		{"a ListenerSet on its own namespace's Gateway serves none", "ListenerSet", listenerSet(map[string]any{"name": "own"}), nil},
		{"nor does one naming its own namespace", "ListenerSet", listenerSet(map[string]any{"name": "own", "namespace": "oil-dev"}), nil},
		{"nor one with no parent", "ListenerSet", map[string]any{"spec": map[string]any{"listeners": []any{map[string]any{"hostname": "a.oil.example.com"}}}}, nil},
		{"a route serves its hostnames whatever its parents", "HTTPRoute",
			map[string]any{"spec": map[string]any{"hostnames": []any{"API.oil.example.com"}, "parentRefs": []any{map[string]any{"name": "own"}}}}, []string{"api.oil.example.com"}},
		{"a Gateway serves none", "Gateway", map[string]any{"spec": map[string]any{"listeners": []any{map[string]any{"hostname": "a.oil.example.com"}}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			group, kind, ok := strings.Cut(tt.kind, "/")
			if !ok {
				group, kind = gatewayGroup, tt.kind
			}
			if got := HostsOf(group, kind, "oil-dev", tt.obj); !slices.Equal(got, tt.want) {
				t.Errorf("HostsOf = %v, want %v", got, tt.want)
			}
		})
	}
}
