package quota_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/quota/quotatest"
)

// TestTwoStrictReplicasAdmitNoMoreThanTheRoom decides 50 parallel creates
// against room for 10, spread over two replicas that share the API server
// but not their reservations, as Admit does: reserve, decide on the count,
// keep or release, and decide again when the ledger changed meanwhile.
func TestTwoStrictReplicasAdmitNoMoreThanTheRoom(t *testing.T) {
	const limit, existing, burst = 20, 10, 50
	server := quotatest.NewAPIServer()
	replicas := []*quota.StrictLedger{
		quota.NewStrictLedger(server, oilView(existing), time.Minute),
		quota.NewStrictLedger(server, oilView(existing), time.Minute),
	}
	var admitted, stale atomic.Int64
	var wg sync.WaitGroup
	for i := range burst {
		wg.Go(func() {
			ledger, c := replicas[i%2], quota.Claim{Key: "pods", Namespace: "a", Name: fmt.Sprintf("burst-%d", i)}
			for {
				counts, hold, err := ledger.Reserve(t.Context(), c, []string{"oil"})
				if err != nil {
					t.Error(err)
					return
				}
				if counts["oil"]+1 > limit {
					hold.Release()
					return
				}
				switch err := hold.Keep(t.Context()); {
				case errors.Is(err, quota.ErrStale):
					stale.Add(1)
					hold.Release()
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
	if got := admitted.Load(); got != limit-existing {
		t.Fatalf("%d of %d creates admitted, want %d (%d decided again)", got, burst, limit-existing, stale.Load())
	}
	cm := server.Stored(quota.NamePrefix + "oil")
	if cm == nil || cm.Labels[quota.TenantLabel] != "oil" {
		t.Fatalf("the ledger of oil: %v", cm)
	}
	if n := strings.Count(cm.Data["claims"], `"key"`); n != limit-existing {
		t.Fatalf("the ledger holds %d claims, want the %d admitted", n, limit-existing)
	}
}

// TestAnObjectSeenCountsOnceNotAlsoAsItsClaim admits a create in strict
// mode, then lets the view see its object: the count stays one higher, as
// the object now, no longer as the ledger's claim.
func TestAnObjectSeenCountsOnceNotAlsoAsItsClaim(t *testing.T) {
	view := oilView(2)
	ledger := quota.NewStrictLedger(quotatest.NewAPIServer(), view, time.Minute)
	reserve := func(name string) int {
		counts, hold, err := ledger.Reserve(t.Context(), quota.Claim{Key: "pods", Namespace: "a", Name: name}, []string{"oil"})
		if err != nil {
			t.Fatal(err)
		}
		if err := hold.Keep(t.Context()); err != nil {
			t.Fatal(err)
		}
		return counts["oil"]
	}
	if got := reserve("web"); got != 2 {
		t.Fatalf("the first create saw %d pods, want 2", got)
	}
	if got := reserve("other"); got != 3 {
		t.Fatalf("the second create saw %d pods, want 3: the first one's claim", got)
	}
	view.Upsert(pod("web"))
	if got := reserve("third"); got != 4 {
		t.Fatalf("after the first pod was seen, a create saw %d pods, want 4", got)
	}
}

// TestAnObjectSeenWhileACreateIsDecidedCountsOnce admits a create in strict
// mode, then has the view see its object come and go while other creates
// are reserved: each must count it once, as the object or as the ledger's
// claim. Reading the count and then whether the claim's object is seen, in
// two reads of the view, counted it in neither (or in both) when the object
// came (or went) between them: an 11th pod against room for 10.
func TestAnObjectSeenWhileACreateIsDecidedCountsOnce(t *testing.T) {
	view := oilView(2)
	ledger := quota.NewStrictLedger(quotatest.NewAPIServer(), view, time.Minute)
	_, hold, err := ledger.Reserve(t.Context(), quota.Claim{Key: "pods", Namespace: "a", Name: "web"}, []string{"oil"})
	if err != nil {
		t.Fatal(err)
	}
	wrong := whileFlipping(t, view, pod("web"), hold, 5000, func(i int) (int, quota.Hold, error) {
		counts, hold, err := ledger.Reserve(t.Context(), quota.Claim{Key: "pods", Namespace: "a", Name: fmt.Sprintf("other-%d", i)}, []string{"oil"})
		return counts["oil"], hold, err
	}, 3)
	if len(wrong) > 0 {
		t.Errorf("of 5000 creates, these saw a count other than 3 (2 pods and web, seen or claimed): %v", wrong)
	}
}

// TestTwoLedgersWithTheirOwnPrefixesKeepApart runs two strict ledgers, as
// two releases would, on one namespace's ConfigMaps: each keeps its own
// ConfigMap per tenant and counts only its own claims.
func TestTwoLedgersWithTheirOwnPrefixesKeepApart(t *testing.T) {
	server := quotatest.NewAPIServer()
	blue := quota.NewStrictLedger(server, oilView(2), time.Minute).WithNamePrefix("blue-quota-")
	green := quota.NewStrictLedger(server, oilView(2), time.Minute).WithNamePrefix("green-quota-")
	for n, ledger := range []*quota.StrictLedger{blue, blue, green} {
		_, hold, err := ledger.Reserve(t.Context(), quota.Claim{Key: "pods", Namespace: "a", Name: strconv.Itoa(n)}, []string{"oil"})
		if err != nil {
			t.Fatal(err)
		}
		if err := hold.Keep(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	for name, claims := range map[string]int{"blue-quota-oil": 2, "green-quota-oil": 1} {
		cm := server.Stored(name)
		if cm == nil {
			t.Fatalf("no ConfigMap %s; stored %d", name, server.Len())
		}
		if n := strings.Count(cm.Data["claims"], `"key"`); n != claims {
			t.Errorf("%s holds %d claims, want %d", name, n, claims)
		}
	}
	if server.Len() != 2 {
		t.Errorf("%d ConfigMaps stored, want 2", server.Len())
	}
}
