package quota

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenantguard/tenantguard/internal/quota/quotatest"
	"github.com/tenantguard/tenantguard/internal/usage"
)

// prunedCluster is a server holding the ledgers of tenants oil and gas,
// counts and usage, each with one entry written at start, the ledger of
// hosts, and the ledger of oil of another instance; the clock is start
// until the test moves it.
func prunedCluster(t *testing.T, start time.Time) (*quotatest.APIServer, *StrictLedger, *time.Time) {
	t.Helper()
	server := quotatest.NewAPIServer()
	now := start
	clock := func() time.Time { return now }
	view := emptyView{}
	ledger := NewStrictLedger(server, view, time.Minute)
	ledger.now = clock
	other := NewStrictLedger(server, view, time.Minute).WithNamePrefix("other-quota-")
	other.now = clock
	for _, l := range []*StrictLedger{ledger, other} {
		for _, tenant := range []string{"oil", "gas"} {
			if l == other && tenant == "gas" {
				continue
			}
			c := Claim{Key: "pods", Namespace: tenant + "-a", Name: "web"}
			_, hold, err := l.Reserve(t.Context(), c, []string{tenant})
			keep(t, hold, err)
			_, hold, err = l.ReserveUsage(t.Context(), UsageClaim(c), tenant, usage.List{{Key: "requests.cpu", N: 100}}, usage.List{{Key: "requests.cpu", N: 100}})
			keep(t, hold, err)
		}
	}
	_, hold, err := ledger.ReserveHosts(t.Context(), HostClaim{Kind: "Ingress", Namespace: "oil-a", Name: "web"}, []string{"a.example.com"}, nil)
	keep(t, hold, err)
	return server, ledger, &now
}

// emptyView is a cluster view that has seen no object: every claim counts.
type emptyView struct{}

func (emptyView) CountUnseen(_, _ string, claims []Pending) int { return len(claims) }

func (emptyView) UsedUnseen(_ string, keys []string, pending []PendingUsage) map[string]int64 {
	used := map[string]int64{}
	for _, p := range pending {
		for _, k := range keys {
			used[k] += p.Expect.Get(k)
		}
	}
	return used
}

func (emptyView) Reached(PendingUsage) bool { return false }

func keep(t *testing.T, hold Hold, err error) {
	t.Helper()
	if err == nil {
		err = hold.Keep(t.Context())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// ledgers are the names of the ConfigMaps server holds, sorted.
func ledgers(t *testing.T, server *quotatest.APIServer) []string {
	t.Helper()
	list, err := server.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cm := range list.Items {
		names = append(names, cm.Name)
	}
	slices.Sort(names)
	return names
}

func TestPruneDeletesTheLedgersOfRemovedTenantsOnceTheirEntriesExpire(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	onlyGas := func(tenant string) bool { return tenant == "gas" }
	t.Run("a removed tenant's entries in force keep its ledgers until they expire", func(t *testing.T) {
		server, ledger, now := prunedCluster(t, start)
		deleted, next, err := ledger.Prune(t.Context(), onlyGas)
		if err != nil || len(deleted) != 0 || !next.Equal(start.Add(time.Minute)) {
			t.Fatalf("deleted %v, next %v, error %v; want nothing deleted and the next prune when oil's entries expire", deleted, next, err)
		}
		*now = next.Add(time.Second)
		deleted, next, err = ledger.Prune(t.Context(), onlyGas)
		if err != nil || !next.IsZero() {
			t.Fatalf("next %v, error %v", next, err)
		}
		if want := []string{"tenantguard-quota-oil", "tenantguard-quota-oil.usage"}; !slices.Equal(deleted, want) && !slices.Equal(deleted, []string{want[1], want[0]}) {
			t.Fatalf("deleted %v, want %v", deleted, want)
		}
		// gas is in the registry; the ledger of hosts is every tenant's;
		// another instance's ledgers are its own.
		want := []string{"other-quota-oil", "other-quota-oil.usage", "tenantguard-quota-gas", "tenantguard-quota-gas.usage", "tenantguard-quota-hosts.edge"}
		if got := ledgers(t, server); !slices.Equal(got, want) {
			t.Fatalf("ledgers left %v, want %v", got, want)
		}
	})
	t.Run("a ledger written between the list and the deletion is left", func(t *testing.T) {
		server, ledger, now := prunedCluster(t, start)
		*now = start.Add(2 * time.Minute)
		ledger.configMaps = writeFirst{server}
		deleted, _, err := ledger.Prune(t.Context(), onlyGas)
		if err != nil || len(deleted) != 0 {
			t.Fatalf("deleted %v, error %v; want nothing deleted", deleted, err)
		}
		if names := ledgers(t, server); !slices.Contains(names, NamePrefix+"oil") {
			t.Fatalf("ledgers %v: oil's was deleted though written since the list", names)
		}
	})
	t.Run("a replica that read a ledger before its deletion writes it again", func(t *testing.T) {
		_, ledger, now := prunedCluster(t, start)
		*now = start.Add(2 * time.Minute)
		c := Claim{Key: "pods", Namespace: "oil-a", Name: "late"}
		_, hold, err := ledger.Reserve(t.Context(), c, []string{"oil"})
		if err != nil {
			t.Fatal(err)
		}
		hold.Release() // Prune takes no lock: only the API server orders it
		if _, _, err := ledger.Prune(t.Context(), onlyGas); err != nil {
			t.Fatal(err)
		}
		if err := hold.Keep(t.Context()); !errors.Is(err, ErrStale) {
			t.Fatalf("keeping on a deleted ledger: %v, want ErrStale (decided again)", err)
		}
		_, hold, err = ledger.Reserve(t.Context(), c, []string{"oil"})
		keep(t, hold, err)
	})
}

// writeFirst writes a ledger before each deletion of it, as a replica
// admitting a create right after the list would.
type writeFirst struct{ *quotatest.APIServer }

func (w writeFirst) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	cm, err := w.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if _, err := w.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return w.APIServer.Delete(ctx, name, opts)
}

func TestABrokenLedgerHoldsNothingInForce(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	server, ledger, _ := prunedCluster(t, start)
	// Each ledger's entries are broken after one that decodes and is in
	// force: a decoder keeping what it read before the error would count
	// them.
	for _, name := range []string{"oil", "oil.usage", "gas", "hosts.edge"} {
		cm := server.Stored(NamePrefix + name)
		raw := cm.Data[claimsKey]
		cm.Data[claimsKey] = raw[:len(raw)-1] + `,5]`
		if _, err := server.Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("a count reads none of its entries, and the ledger is written whole again", func(t *testing.T) {
		counts, hold, err := ledger.Reserve(t.Context(), Claim{Key: "pods", Namespace: "gas-a", Name: "other"}, []string{"gas"})
		keep(t, hold, err)
		if counts["gas"] != 0 {
			t.Fatalf("counted %d claims of the broken ledger, want none", counts["gas"])
		}
		if entries := entriesOf[entry](server.Stored(NamePrefix + "gas")); len(entries) != 1 || entries[0].Name != "other" {
			t.Fatalf("the ledger holds %+v, want the new claim alone", entries)
		}
	})
	t.Run("a host is free", func(t *testing.T) {
		conflicts, hold, err := ledger.ReserveHosts(t.Context(), HostClaim{Kind: "Ingress", Namespace: "gas-a", Name: "other"}, []string{"a.example.com"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		hold.Release()
		if len(conflicts) != 0 {
			t.Fatalf("conflicts %+v with the broken ledger's claims, want none", conflicts)
		}
	})
	t.Run("a removed tenant's is deleted at once", func(t *testing.T) {
		deleted, next, err := ledger.Prune(t.Context(), func(tenant string) bool { return tenant == "gas" })
		if err != nil || !next.IsZero() || len(deleted) != 2 {
			t.Fatalf("deleted %v, next %v, error %v; want oil's two ledgers deleted, nothing to prune later", deleted, next, err)
		}
	})
}

// panicking is a view whose counts panic while panics is set: a bug.
type panicking struct {
	emptyView
	panics atomic.Bool
}

func (v *panicking) CountUnseen(tenant, key string, claims []Pending) int {
	if v.panics.Load() {
		panic("a bug in the view")
	}
	return v.emptyView.CountUnseen(tenant, key, claims)
}

func (v *panicking) UsedUnseen(tenant string, keys []string, pending []PendingUsage) map[string]int64 {
	if v.panics.Load() {
		panic("a bug in the view")
	}
	return v.emptyView.UsedUnseen(tenant, keys, pending)
}

// TestAReservationThatPanicsReleasesItsLocks: the handler recovers a panic
// of a decision, and the next requests of the tenant must not wait for
// ever on the locks the panicking reservation took.
func TestAReservationThatPanicsReleasesItsLocks(t *testing.T) {
	view := &panicking{}
	ledger := NewStrictLedger(quotatest.NewAPIServer(), view, time.Minute)
	c := Claim{Key: "pods", Namespace: "oil-a", Name: "web"}
	cpu := usage.List{{Key: "requests.cpu", N: 100}}
	reservations := []func(){
		func() {
			if _, hold, err := ledger.Reserve(t.Context(), c, []string{"oil"}); err == nil {
				hold.Release()
			}
		},
		func() {
			if _, hold, err := ledger.ReserveUsage(t.Context(), UsageClaim(c), "oil", cpu, cpu); err == nil {
				hold.Release()
			}
		},
	}
	view.panics.Store(true)
	for _, reserve := range reservations {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("the view did not panic: the test does not reach the case")
				}
			}()
			reserve()
		}()
	}
	view.panics.Store(false)
	done := make(chan struct{})
	go func() {
		for _, reserve := range reservations {
			reserve()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the tenant's next reservations still wait on the locks of one that panicked")
	}
}
