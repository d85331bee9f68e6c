package export

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tenantguard/tenantguard/internal/registry"
)

func TestTheSyncSetHasTheKindsThatServeHostsWhenATenantRefusesCollisions(t *testing.T) {
	hostKinds := []string{"networking.k8s.io/v1/Ingress", "gateway.networking.k8s.io/v1/HTTPRoute", "gateway.networking.k8s.io/v1/GRPCRoute", "gateway.networking.k8s.io/v1/TLSRoute", "gateway.networking.k8s.io/v1/ListenerSet", "gateway.networking.x-k8s.io/v1alpha1/XListenerSet"}
	tests := []struct {
		name, scope string
		synced      bool
	}{
		{"scope cluster syncs them", "cluster", true},
		{"scope namespace syncs them", "namespace", true},
		{"scope off does not", "off", false},
		{"no scope does not", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: oil\n    owners: [{kind: User, name: alice}]\n"
			if tt.scope != "" {
				doc += "    ingress: {hostnameCollision: " + tt.scope + "}\n"
			}
			snap, err := registry.Parse("registry.yaml", []byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			sync, _ := syncKinds(snap)
			var kinds []string
			for _, gvk := range sync {
				m := gvk.(map[string]any)
				group := m["groups"].([]any)[0]
				prefix := ""
				if group != "" {
					prefix = fmt.Sprint(group, "/")
				}
				kinds = append(kinds, fmt.Sprint(prefix, m["versions"].([]any)[0], "/", m["kinds"].([]any)[0]))
			}
			for _, k := range hostKinds {
				if slices.Contains(kinds, k) != tt.synced {
					t.Errorf("SyncSet %v: %s synced %v, want %v", kinds, k, !tt.synced, tt.synced)
				}
			}
		})
	}
}
