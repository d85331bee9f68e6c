package quota_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/quota/quotatest"
)

// TestTwoStrictReplicasAdmitOneObjectPerHost decides 20 parallel creates of
// Ingresses serving one host, from 20 namespaces, spread over two replicas
// that share the API server but not their views, as Admit does: reserve,
// refuse when another holds the host, keep or release, and decide again
// when the ledger of hosts changed meanwhile.
func TestTwoStrictReplicasAdmitOneObjectPerHost(t *testing.T) {
	const burst = 20
	server := quotatest.NewAPIServer()
	replicas := []*quota.StrictLedger{
		quota.NewStrictLedger(server, clusterview.New(label), time.Minute),
		quota.NewStrictLedger(server, clusterview.New(label), time.Minute),
	}
	var admitted, stale atomic.Int64
	var wg sync.WaitGroup
	for i := range burst {
		wg.Go(func() {
			self := quota.HostClaim{Group: "networking.k8s.io", Kind: "Ingress", Namespace: fmt.Sprintf("ns%d", i), Name: "web"}
			for {
				held, hold, err := replicas[i%2].ReserveHosts(t.Context(), self, []string{"shop.example.com"}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if len(held) > 0 {
					hold.Release()
					return
				}
				switch err := hold.Keep(t.Context()); {
				case errors.Is(err, quota.ErrStale):
					stale.Add(1)
				case err != nil:
					t.Error(err)
					return
				default:
					admitted.Add(1)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := admitted.Load(); got != 1 {
		t.Fatalf("%d of %d creates admitted, want 1 (%d decided again)", got, burst, stale.Load())
	}
	if cm := server.Stored(quota.NamePrefix + "hosts.edge"); cm == nil || cm.Labels[quota.TenantLabel] != "hosts.edge" {
		t.Fatalf("the ledger of hosts: %v", cm)
	}
}

func TestAClaimOnAHostHoldsItUntilTheViewSeesItsObject(t *testing.T) {
	view := clusterview.New(label)
	ledger := quota.NewStrictLedger(quotatest.NewAPIServer(), view, time.Minute)
	web := quota.HostClaim{Group: "networking.k8s.io", Kind: "Ingress", Namespace: "a", Name: "web"}
	other := quota.HostClaim{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute", Namespace: "b", Name: "shop"}
	reserve := func(self quota.HostClaim) []quota.HostConflict {
		t.Helper()
		held, hold, err := ledger.ReserveHosts(t.Context(), self, []string{"shop.example.com"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		hold.Release()
		return held
	}
	_, hold, err := ledger.ReserveHosts(t.Context(), web, []string{"shop.example.com"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Keep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if held := reserve(other); len(held) != 1 || held[0].Name != "web" || held[0].Host != "shop.example.com" || held[0].Asked != "shop.example.com" {
		t.Fatalf("another object sees %v, want web's claim", held)
	}
	if held := reserve(web); len(held) != 0 {
		t.Fatalf("the object itself sees %v, want nothing", held)
	}
	view.UpdateHosts(nil, &clusterview.Object{Group: web.Group, Kind: web.Kind, Namespace: web.Namespace, Name: web.Name, Hosts: []string{"shop.example.com"}})
	if held := reserve(other); len(held) != 0 {
		t.Fatalf("once the view serves web's host, the ledger still holds %v", held)
	}
}

// TestTheLedgerOfHostsFindsWildcardsAsTheViewDoes holds a claim in the
// ledger and asks for hosts that collide with it, or do not, as the view's
// index of hosts reads wildcards: an Ingress's covers one label, a route's
// any number, narrower wildcards included; an Ingress's covers no other
// wildcard, and two side by side do not collide.
func TestTheLedgerOfHostsFindsWildcardsAsTheViewDoes(t *testing.T) {
	const ingress, route = "networking.k8s.io/Ingress", "gateway.networking.k8s.io/HTTPRoute"
	claim := func(kind, ns, host string) quota.HostClaim {
		group, k, _ := strings.Cut(kind, "/")
		return quota.HostClaim{Host: host, Group: group, Kind: k, Namespace: ns, Name: "web"}
	}
	for _, tc := range []struct {
		name  string
		held  quota.HostClaim
		asker quota.HostClaim
		asks  []string
		want  []quota.HostConflict
	}{
		{
			name: "a host under an Ingress's wildcard collides with it",
			held: claim(ingress, "a", "*.apps.example.com"), asker: claim(ingress, "b", ""),
			asks: []string{"other.example.com", "shop.apps.example.com"},
			want: []quota.HostConflict{{Asked: "shop.apps.example.com", HostClaim: claim(ingress, "a", "*.apps.example.com")}},
		},
		{
			name: "a host two labels under an Ingress's wildcard does not",
			held: claim(ingress, "a", "*.apps.example.com"), asker: claim(route, "b", ""),
			asks: []string{"a.shop.apps.example.com"},
		},
		{
			name: "a host two labels under a route's wildcard does",
			held: claim(route, "a", "*.apps.example.com"), asker: claim(ingress, "b", ""),
			asks: []string{"a.shop.apps.example.com"},
			want: []quota.HostConflict{{Asked: "a.shop.apps.example.com", HostClaim: claim(route, "a", "*.apps.example.com")}},
		},
		{
			name: "a wildcard asked for collides with a host claimed under it, read as the asker's kind reads it",
			held: claim(ingress, "a", "a.shop.apps.example.com"), asker: claim(route, "b", ""),
			asks: []string{"*.apps.example.com"},
			want: []quota.HostConflict{{Asked: "*.apps.example.com", HostClaim: claim(ingress, "a", "a.shop.apps.example.com")}},
		},
		{
			name: "an Ingress's wildcard does not reach two labels down",
			held: claim(route, "a", "a.shop.apps.example.com"), asker: claim(ingress, "b", ""),
			asks: []string{"*.apps.example.com"},
		},
		{
			name: "a wildcard under a route's wildcard collides with it",
			held: claim(route, "a", "*.apps.example.com"), asker: claim(ingress, "b", ""),
			asks: []string{"*.shop.apps.example.com"},
			want: []quota.HostConflict{{Asked: "*.shop.apps.example.com", HostClaim: claim(route, "a", "*.apps.example.com")}},
		},
		{
			name: "a route's wildcard asked for collides with a narrower wildcard claimed under it",
			held: claim(ingress, "a", "*.shop.apps.example.com"), asker: claim(route, "b", ""),
			asks: []string{"*.apps.example.com"},
			want: []quota.HostConflict{{Asked: "*.apps.example.com", HostClaim: claim(ingress, "a", "*.shop.apps.example.com")}},
		},
		{
			name: "an Ingress's wildcard covers no other wildcard",
			held: claim(ingress, "a", "*.apps.example.com"), asker: claim(route, "b", ""),
			asks: []string{"*.shop.apps.example.com"},
		},
		{
			name: "two wildcards side by side do not collide",
			held: claim(route, "a", "*.apps.example.com"), asker: claim(route, "b", ""),
			asks: []string{"*.other.example.com"},
		},
		{
			name: "a name that only ends like the wildcard's domain does not",
			held: claim(ingress, "a", "*.example.com"), asker: claim(ingress, "b", ""),
			asks: []string{"evil-example.com"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ledger := quota.NewStrictLedger(quotatest.NewAPIServer(), clusterview.New(label), time.Minute)
			held := tc.held
			held.Host = ""
			_, hold, err := ledger.ReserveHosts(t.Context(), held, []string{tc.held.Host}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := hold.Keep(t.Context()); err != nil {
				t.Fatal(err)
			}
			got, hold, err := ledger.ReserveHosts(t.Context(), tc.asker, tc.asks, nil)
			if err != nil {
				t.Fatal(err)
			}
			hold.Release()
			if !slices.Equal(got, tc.want) {
				t.Fatalf("%v asking for %v finds %v, want %v", tc.asker.Kind, tc.asks, got, tc.want)
			}
		})
	}
}

// TestAnUpdateClaimsOnlyTheHostsItAdds: an update that keeps its hosts
// writes nothing (a GitOps sync of every Ingress would otherwise rewrite
// the one ledger of hosts once per object); one that adds a host claims
// that host; one that drops a host gives its claim back; and a create's
// claims stand through an update that keeps them.
func TestAnUpdateClaimsOnlyTheHostsItAdds(t *testing.T) {
	server := quotatest.NewAPIServer()
	ledger := quota.NewStrictLedger(server, clusterview.New(label), time.Minute)
	web := quota.HostClaim{Group: "networking.k8s.io", Kind: "Ingress", Namespace: "a", Name: "web"}
	keep := func(hosts, kept []string) {
		t.Helper()
		_, hold, err := ledger.ReserveHosts(t.Context(), web, hosts, kept)
		if err != nil {
			t.Fatal(err)
		}
		if err := hold.Keep(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	claimed := func() (hosts []string, version int) {
		t.Helper()
		cm := server.Stored(quota.NamePrefix + "hosts.edge")
		var entries []struct{ Host string }
		if err := json.Unmarshal([]byte(cm.Data["claims"]), &entries); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			hosts = append(hosts, e.Host)
		}
		slices.Sort(hosts)
		return hosts, server.Version()
	}
	keep([]string{"old.example.com"}, []string{"old.example.com"}) // an update of an object served before the ledger knew it
	if server.Len() != 0 {
		t.Fatal("an update keeping the one host it served wrote the ledger")
	}
	keep([]string{"a.example.com"}, nil) // the create
	_, created := claimed()
	keep([]string{"a.example.com"}, []string{"a.example.com"})
	if hosts, v := claimed(); v != created || !slices.Equal(hosts, []string{"a.example.com"}) {
		t.Fatalf("an update keeping its host: claims %v at version %d, want the create's, unwritten (%d)", hosts, v, created)
	}
	keep([]string{"a.example.com", "b.example.com"}, []string{"a.example.com"})
	if hosts, _ := claimed(); !slices.Equal(hosts, []string{"a.example.com", "b.example.com"}) {
		t.Fatalf("an update adding b: claims %v", hosts)
	}
	keep([]string{"b.example.com"}, []string{"b.example.com"})
	if hosts, _ := claimed(); !slices.Equal(hosts, []string{"b.example.com"}) {
		t.Fatalf("an update dropping a: claims %v, want b's only", hosts)
	}
}

// TestATenantAddsAtMostMostHostsHeldToTheLedgerOfHosts: one tenant's entries
// in the ledger of hosts, and the hosts a request would add to them, stay
// within quota.MostHostsHeld; the object's own entries and the hosts it
// kept are not added again, and other tenants, and namespaces of none, have
// their own room.
func TestATenantAddsAtMostMostHostsHeldToTheLedgerOfHosts(t *testing.T) {
	ledger := quota.NewStrictLedger(quotatest.NewAPIServer(), clusterview.New(label), time.Minute)
	hosts := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%d.example.com", prefix, i)
		}
		return out
	}
	claim := func(namespace, name, tenant string) quota.HostClaim {
		return quota.HostClaim{Group: "networking.k8s.io", Kind: "Ingress", Namespace: namespace, Name: name, Tenant: tenant}
	}
	keep := func(self quota.HostClaim, hosts, kept []string) error {
		t.Helper()
		held, hold, err := ledger.ReserveHosts(t.Context(), self, hosts, kept)
		if err != nil {
			return err
		}
		if len(held) > 0 {
			t.Fatalf("%s holds %v", self.Name, held)
		}
		return hold.Keep(t.Context())
	}
	most := quota.MostHostsHeld
	if err := keep(claim("oil-a", "big", "oil"), hosts("big", most-10), nil); err != nil {
		t.Fatal(err)
	}
	var full *quota.TooManyHostsError
	if err := keep(claim("oil-b", "more", "oil"), hosts("more", 11), nil); !errors.As(err, &full) || *full != (quota.TooManyHostsError{Tenant: "oil", Held: most - 10, Asked: 11, Most: most}) {
		t.Fatalf("error %v, want oil over its %d", err, most)
	}
	tests := []struct {
		name        string
		self        quota.HostClaim
		hosts, kept []string
	}{
		{"the object's own entries (a decision again after the ledger changed) and 10 more hosts", claim("oil-a", "big", "oil"), hosts("big", most), nil},
		{"an update keeps the hosts its object served", claim("oil-b", "web", "oil"), hosts("web", 5), hosts("web", 5)},
		{"another tenant has its own room", claim("gas-a", "big", "gas"), hosts("gas", most), nil},
		{"a namespace of no tenant has no bound", claim("infra", "big", ""), hosts("infra", most+1), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := keep(tt.self, tt.hosts, tt.kept); err != nil {
				t.Fatal(err)
			}
		})
	}
	if err := keep(claim("oil-b", "more", "oil"), hosts("more", 1), nil); !errors.As(err, &full) || full.Held != most {
		t.Fatalf("error %v, want oil at its %d", err, most)
	}
	// The object's own entries it keeps count: it cannot grow past the bound.
	if err := keep(claim("oil-a", "big", "oil"), hosts("big", most+1), nil); !errors.As(err, &full) || *full != (quota.TooManyHostsError{Tenant: "oil", Held: most, Asked: 1, Most: most}) {
		t.Fatalf("error %v, want big's own %d entries held", err, most)
	}
}

// TestATenantsEntriesTakeAtMostAQuarterOfTheLedgerOfHosts: long hosts and
// names bound a tenant to fewer entries than quota.MostHostsHeld, so that
// one tenant alone cannot fill the ledger of hosts with them.
func TestATenantsEntriesTakeAtMostAQuarterOfTheLedgerOfHosts(t *testing.T) {
	ledger := quota.NewStrictLedger(quotatest.NewAPIServer(), clusterview.New(label), time.Minute)
	label60 := strings.Repeat("a", 60)
	long := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%d.%s.%s.%s.example.com", prefix, i, label60, label60, label60)
		}
		return out
	}
	self := quota.HostClaim{Group: "networking.k8s.io", Kind: "Ingress", Namespace: "oil-a", Name: strings.Repeat("n", 250), Tenant: "oil"}
	_, hold, err := ledger.ReserveHosts(t.Context(), self, long("a", 300), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Keep(t.Context()); err != nil {
		t.Fatal(err)
	}
	self.Name = strings.Repeat("m", 250)
	var full *quota.TooManyHostsError
	if _, _, err := ledger.ReserveHosts(t.Context(), self, long("b", 150), nil); !errors.As(err, &full) || full.MostBytes != quota.MostHostBytes || full.Asked != 150 || full.Held != 300 || full.Bytes+full.AskedBytes <= quota.MostHostBytes {
		t.Fatalf("error %v, want oil's entries over %d bytes", err, quota.MostHostBytes)
	}
	if _, hold, err := ledger.ReserveHosts(t.Context(), self, long("b", 50), nil); err != nil {
		t.Fatalf("50 more long hosts: %v", err)
	} else {
		hold.Release()
	}
}
