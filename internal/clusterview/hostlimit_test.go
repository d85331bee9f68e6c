package clusterview

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/internal/quota"
)

// TestATenantsRequestsHoldAtMostMostNewHosts: the hosts a tenant's requests
// hold, less those their objects served before, stay within HoldOptions.Most;
// a request that would go past it holds nothing, and the count goes down as
// holds are released, expire or are taken over by the objects seen.
func TestATenantsRequestsHoldAtMostMostNewHosts(t *testing.T) {
	v := New(label)
	now := time.Now()
	v.hosts.now = func() time.Time { return now }
	oil := func() HoldOptions { return HoldOptions{TTL: time.Minute, Tenant: "oil", Most: 4} }
	web := ingress("oil-a", "web", "a.oil.example.com", "b.oil.example.com", "c.oil.example.com")
	_, webHold, err := v.ReserveHosts(holderOf(web), web.Hosts, oil())
	if err != nil {
		t.Fatal(err)
	}
	webHold.Keep()
	shop := ingress("oil-b", "shop", "d.oil.example.com", "e.oil.example.com")
	var full *quota.TooManyHostsError
	if _, _, err := v.ReserveHosts(holderOf(shop), shop.Hosts, oil()); !errors.As(err, &full) || *full != (quota.TooManyHostsError{Tenant: "oil", Held: 3, Asked: 2, Most: 4}) {
		t.Fatalf("error %v, want oil's 3 hosts held and 2 asked, over 4", err)
	}
	if n := v.heldHosts()["oil"]; n != 3 {
		t.Fatalf("oil holds %d hosts after a refused hold, want 3", n)
	}
	tests := []struct {
		name string
		o    *Object
		opts HoldOptions
	}{
		{"another tenant's request has its own count", route("gas-a", "shop", "d.gas.example.com", "e.gas.example.com"), HoldOptions{TTL: time.Minute, Tenant: "gas", Most: 4}},
		{"a namespace of no tenant has no bound", route("infra", "shop", "a.example.com", "b.example.com", "c.example.com", "d.example.com", "e.example.com"), HoldOptions{TTL: time.Minute, Most: 4}},
		{"hosts the object served before are not counted", ingress("oil-a", "web", "a.oil.example.com", "b.oil.example.com", "c.oil.example.com", "f.oil.example.com"), HoldOptions{TTL: time.Minute, Tenant: "oil", Most: 4, Served: web.Hosts}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, hold, err := v.ReserveHosts(holderOf(tt.o), tt.o.Hosts, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			hold.Release()
		})
	}
	if n := v.heldHosts()["oil"]; n != 3 {
		t.Fatalf("oil holds %d hosts after holds released, want 3", n)
	}
	// web seen serving two of its hosts: those holds end, the third stays.
	seen := ingress("oil-a", "web", "a.oil.example.com", "b.oil.example.com")
	v.UpdateHosts(nil, seen)
	if n := v.heldHosts()["oil"]; n != 1 {
		t.Fatalf("oil holds %d hosts once web is seen serving 2 of its 3, want 1", n)
	}
	_, shopHold, err := v.ReserveHosts(holderOf(shop), shop.Hosts, oil())
	if err != nil {
		t.Fatalf("shop's 2 hosts beside oil's 1: %v", err)
	}
	shopHold.Keep()
	_, lone, err := v.ReserveHosts(holderOf(route("oil-b", "lone", "g.oil.example.com")), []string{"g.oil.example.com"}, oil())
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if n := v.heldHosts()["oil"]; n != 0 {
		t.Fatalf("oil holds %d hosts once its holds expired, want 0", n)
	}
	// A hold released after it expired (its request decided late) is
	// not taken off the count again.
	_, again, err := v.ReserveHosts(holderOf(shop), shop.Hosts, oil())
	if err != nil {
		t.Fatal(err)
	}
	again.Keep()
	lone.Release()
	if n := v.heldHosts()["oil"]; n != 2 {
		t.Fatalf("oil holds %d hosts after an expired hold was released, want shop's 2", n)
	}
}

// heldHosts is how many hosts each tenant's requests hold, as
// HoldOptions.Most bounds them.
func (v *View) heldHosts() map[string]int {
	v.hosts.mu.Lock()
	defer v.hosts.mu.Unlock()
	v.hosts.expire(v.hosts.now())
	return maps.Clone(v.hosts.heldBy)
}
