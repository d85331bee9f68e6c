package quota_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/quota/quotatest"
)

// ledgerNames are the names in a ledger ConfigMap's entries, sorted.
func ledgerNames(t *testing.T, server *quotatest.APIServer, name, field string) []string {
	t.Helper()
	cm := server.Stored(name)
	if cm == nil {
		t.Fatalf("no ConfigMap %s", name)
	}
	var entries []map[string]any
	if err := json.Unmarshal([]byte(cm.Data["claims"]), &entries); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e[field].(string))
	}
	slices.Sort(names)
	return names
}

// kept is a hold kept, which the test withdraws.
func kept(t *testing.T, hold quota.Hold, err error) quota.Withdrawer {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Keep(t.Context()); err != nil {
		t.Fatal(err)
	}
	w, ok := hold.(quota.Withdrawer)
	if !ok {
		t.Fatalf("%T is not a Withdrawer", hold)
	}
	return w
}

// keptUsage is a pod of 100m named name, admitted in namespace a of oil.
func keptUsage(t *testing.T, l *quota.StrictLedger, name string) quota.Withdrawer {
	t.Helper()
	c := quota.UsageClaim(quota.Claim{Key: "pods", Namespace: "a", Name: name})
	_, hold, err := l.ReserveUsage(t.Context(), c, "oil", cpu(100), cpu(100))
	return kept(t, hold, err)
}

// TestAWithdrawnHoldTakesOutItsOwnEntriesOnly: a request refused after its
// hold was kept takes its entry out of the ledger, and only its own, even
// when another replica writes the ledger between its read and its write.
func TestAWithdrawnHoldTakesOutItsOwnEntriesOnly(t *testing.T) {
	t.Run("a sum of resources", func(t *testing.T) {
		server := quotatest.NewAPIServer()
		ledger := quota.NewStrictLedger(server, busyView(0), time.Minute)
		other := quota.NewStrictLedger(server, busyView(0), time.Minute)
		refused := keptUsage(t, ledger, "refused")
		keptUsage(t, ledger, "admitted")
		server.BeforeUpdate = func(string) {
			server.BeforeUpdate = nil
			keptUsage(t, other, "elsewhere")
		}
		if err := refused.Withdraw(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := ledgerNames(t, server, quota.NamePrefix+"oil.usage", "name"); !slices.Equal(got, []string{"admitted", "elsewhere"}) {
			t.Fatalf("the ledger holds %v, want the admitted pod's and the other replica's", got)
		}
		if err := refused.Withdraw(t.Context()); err != nil {
			t.Fatalf("withdrawing again: %v", err)
		}
	})
	t.Run("hosts", func(t *testing.T) {
		server := quotatest.NewAPIServer()
		ledger := quota.NewStrictLedger(server, clusterview.New(label), time.Minute)
		reserve := func(name, host string) quota.Withdrawer {
			self := quota.HostClaim{Group: "networking.k8s.io", Kind: "Ingress", Namespace: "a", Name: name}
			_, hold, err := ledger.ReserveHosts(t.Context(), self, []string{host}, nil)
			return kept(t, hold, err)
		}
		refused := reserve("refused", "a.example.com")
		reserve("admitted", "b.example.com")
		if err := refused.Withdraw(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := ledgerNames(t, server, quota.NamePrefix+"hosts.edge", "host"); !slices.Equal(got, []string{"b.example.com"}) {
			t.Fatalf("the ledger of hosts holds %v, want b.example.com alone", got)
		}
	})
}

// TestAWithdrawalGivesUpOnALedgerThatKeepsChanging: past its tries, the
// entry is left to expire and the error says so.
func TestAWithdrawalGivesUpOnALedgerThatKeepsChanging(t *testing.T) {
	server := quotatest.NewAPIServer()
	ledger := quota.NewStrictLedger(server, busyView(0), time.Minute)
	other := quota.NewStrictLedger(server, busyView(0), time.Minute)
	refused := keptUsage(t, ledger, "refused")
	n := 0
	server.BeforeUpdate = func(string) {
		n++
		if n%2 == 1 { // the other replica's own update calls the hook too
			keptUsage(t, other, fmt.Sprintf("busy-%d", n))
		}
	}
	if err := refused.Withdraw(t.Context()); err == nil {
		t.Fatal("a withdrawal that lost every race succeeded")
	}
	server.BeforeUpdate = nil
	if got := ledgerNames(t, server, quota.NamePrefix+"oil.usage", "name"); !slices.Contains(got, "refused") {
		t.Fatalf("the ledger holds %v; the entry withdrawn in vain should be left to expire", got)
	}
}

// TestACountKeptOverSomeTenantsWithdrawsWhatItWrote: a create counted
// against two tenants whose write to the second lost a race has written
// the first; withdrawn, it takes that entry out.
func TestACountKeptOverSomeTenantsWithdrawsWhatItWrote(t *testing.T) {
	server := quotatest.NewAPIServer()
	ledger := quota.NewStrictLedger(server, busyView(0), time.Minute)
	other := quota.NewStrictLedger(server, busyView(0), time.Minute)
	admit := func(l *quota.StrictLedger, name string, tenants ...string) error {
		_, hold, err := l.Reserve(t.Context(), quota.Claim{Key: "namespaces", Name: name}, tenants)
		if err != nil {
			t.Fatal(err)
		}
		defer hold.Release()
		return hold.Keep(t.Context())
	}
	if err := admit(other, "oil-first", "oil"); err != nil {
		t.Fatal(err)
	}
	server.BeforeUpdate = func(name string) {
		if name == quota.NamePrefix+"oil" {
			server.BeforeUpdate = nil
			if err := admit(other, "oil-second", "oil"); err != nil {
				t.Error(err)
			}
		}
	}
	_, hold, err := ledger.Reserve(t.Context(), quota.Claim{Key: "namespaces", Name: "moved"}, []string{"gas", "oil"})
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Keep(t.Context()); !errors.Is(err, quota.ErrStale) {
		t.Fatalf("keeping against a changed ledger of oil: %v, want ErrStale", err)
	}
	hold.Release()
	if got := ledgerNames(t, server, quota.NamePrefix+"gas", "name"); !slices.Equal(got, []string{"moved"}) {
		t.Fatalf("gas's ledger holds %v before the withdrawal, want the create's entry: the test does not reach the case", got)
	}
	if err := hold.(quota.Withdrawer).Withdraw(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := ledgerNames(t, server, quota.NamePrefix+"gas", "name"); len(got) != 0 {
		t.Fatalf("gas's ledger holds %v after the withdrawal, want nothing", got)
	}
}
