package hostname

import "testing"

func TestCollide(t *testing.T) {
	const ingress, route = "networking.k8s.io", GatewayGroup
	for _, tt := range []struct {
		name      string
		a, aGroup string
		b, bGroup string
		want      bool
	}{
		{"the same name collides", "shop.example.com", ingress, "shop.example.com", route, true},
		{"a name one label under an Ingress's wildcard collides", "*.example.com", ingress, "shop.example.com", route, true},
		{"a name two labels under an Ingress's wildcard does not", "*.example.com", ingress, "a.shop.example.com", route, false},
		{"a name two labels under a route's wildcard does", "a.shop.example.com", ingress, "*.example.com", route, true},
		{"and under an XListenerSet's listener's", "a.shop.example.com", ingress, "*.example.com", ExperimentalGatewayGroup, true},
		{"a wildcard under a route's wildcard does", "*.shop.example.com", ingress, "*.example.com", route, true},
		{"a wildcard under an Ingress's wildcard does not", "*.example.com", ingress, "*.shop.example.com", route, false},
		{"two wildcards side by side do not", "*.a.example.com", route, "*.b.example.com", route, false},
		{"a name that only ends like the wildcard's domain does not", "*.example.com", route, "evil-example.com", route, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Collide(tt.a, tt.aGroup, tt.b, tt.bGroup); got != tt.want {
				t.Errorf("Collide(%q, %q) = %t, want %t", tt.a, tt.b, got, tt.want)
			}
			if got := Collide(tt.b, tt.bGroup, tt.a, tt.aGroup); got != tt.want {
				t.Errorf("Collide(%q, %q) = %t, want %t (the other way)", tt.b, tt.a, got, tt.want)
			}
		})
	}
}
