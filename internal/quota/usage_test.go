package quota_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/quota/quotatest"
	"github.com/tenantguard/tenantguard/internal/usage"
)

// cpu is a usage of n thousandths of requests.cpu.
func cpu(n int64) usage.List { return usage.List{{Key: "requests.cpu", N: n}} }

// busyView is namespace "a" of tenant oil with n pods of 100m each.
func busyView(n int) *clusterview.View {
	v := clusterview.New(label)
	v.Upsert(namespace("a", "oil"))
	for i := range n {
		o := pod(fmt.Sprintf("busy-%d", i))
		o.Usage = cpu(100)
		v.Upsert(o)
	}
	return v
}

// usageLedger is the part of both ledgers that holds what requests add.
type usageLedger interface {
	ReserveUsage(ctx context.Context, c quota.Claim, tenant string, adds, expect usage.List) (map[string]int64, quota.Hold, error)
}

// burstOfPods decides 50 creates of 100m against a limit of 2000m with
// 1000m in use, spread over ledgers as Admit decides them, and returns how
// many were admitted.
func burstOfPods(t *testing.T, ledgers []usageLedger) int64 {
	const limit, burst = 2000, 50
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range burst {
		wg.Go(func() {
			ledger := ledgers[i%len(ledgers)]
			c := quota.UsageClaim(quota.Claim{Key: "pods", Namespace: "a", Name: fmt.Sprintf("burst-%d", i)})
			for {
				used, hold, err := ledger.ReserveUsage(t.Context(), c, "oil", cpu(100), cpu(100))
				if err != nil {
					t.Error(err)
					return
				}
				if used["requests.cpu"]+100 > limit {
					hold.Release()
					return
				}
				switch err := hold.Keep(t.Context()); {
				case errors.Is(err, quota.ErrStale):
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
	return admitted.Load()
}

func TestABurstOfPodsTakesNoMoreThanTheRoomOfASum(t *testing.T) {
	t.Run("one replica", func(t *testing.T) {
		view := busyView(10)
		if got := burstOfPods(t, []usageLedger{quota.LocalLedger{View: view}}); got != 10 {
			t.Fatalf("%d of 50 pods of 100m admitted against 1000m of room, want 10", got)
		}
		if got := view.Used("oil", "requests.cpu"); got != 2000 {
			t.Fatalf("the tenant's sum with the admitted holds is %dm, want 2000m", got)
		}
	})
	t.Run("two strict replicas", func(t *testing.T) {
		server := quotatest.NewAPIServer()
		replicas := []usageLedger{
			quota.NewStrictLedger(server, busyView(10), time.Minute),
			quota.NewStrictLedger(server, busyView(10), time.Minute),
		}
		if got := burstOfPods(t, replicas); got != 10 {
			t.Fatalf("%d of 50 pods of 100m admitted against 1000m of room by two replicas, want 10", got)
		}
		if server.Stored(quota.NamePrefix+"oil.usage") == nil {
			t.Fatal("no ledger of usage was written")
		}
	})
}

func TestAHoldOnASumEndsWhenTheObjectIsSeenWithWhatItExpects(t *testing.T) {
	view := busyView(0)
	c := quota.Claim{Key: "pods", Namespace: "a", Name: "web"}
	used, hold, err := quota.LocalLedger{View: view}.ReserveUsage(t.Context(), quota.UsageClaim(c), "oil", cpu(300), cpu(500))
	// The view has not seen the pod yet: it counts at the 500m it will
	// hold, of which the request asks 300m.
	if err != nil || used["requests.cpu"] != 200 {
		t.Fatalf("ReserveUsage = %v, %v; want 200m in use before the request", used, err)
	}
	if err := hold.Keep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := view.Used("oil", "requests.cpu"); got != 500 {
		t.Fatalf("sum %dm with the hold, want the 500m it expects", got)
	}
	older := pod("web")
	older.Usage = cpu(200) // an informer event from before the resize
	view.Upsert(older)
	if got := view.Used("oil", "requests.cpu"); got != 500 {
		t.Fatalf("sum %dm after the object was seen as it was before the request, want 200m seen and 300m held", got)
	}
	resized := pod("web")
	resized.Usage = cpu(500)
	view.Upsert(resized)
	if got := view.Used("oil", "requests.cpu"); got != 500 {
		t.Fatalf("sum %dm once the object was seen resized, want its 500m alone", got)
	}
	view.Delete(resized)
	if got := view.Used("oil", "requests.cpu"); got != 0 {
		t.Fatalf("sum %dm after the delete, want 0", got)
	}
}

func TestSumsFollowTheirNamespacesBetweenTenants(t *testing.T) {
	view := busyView(3)
	view.Upsert(namespace("a", "gas"))
	if oil, gas := view.Used("oil", "requests.cpu"), view.Used("gas", "requests.cpu"); oil != 0 || gas != 300 {
		t.Fatalf("after relabelling: oil %dm, gas %dm; want 0 and 300m", oil, gas)
	}
	finished := pod("busy-0")
	finished.Usage = usage.List{}
	view.Upsert(finished)
	if got := view.Used("gas", "requests.cpu"); got != 200 {
		t.Fatalf("a finished pod still counts: %dm, want 200m", got)
	}
}

// TestAPodSeenWhileAPodIsDecidedCountsOnceInTheSums is
// TestAnObjectSeenWhileACreateIsDecidedCountsOnce for sums: an admitted
// pod of 100m whose object the view sees come and go adds 100m to every
// sum read meanwhile, as the object or as the ledger's entry.
func TestAPodSeenWhileAPodIsDecidedCountsOnceInTheSums(t *testing.T) {
	view := busyView(2)
	ledger := quota.NewStrictLedger(quotatest.NewAPIServer(), view, time.Minute)
	web := pod("web")
	web.Usage = cpu(100)
	_, hold, err := ledger.ReserveUsage(t.Context(), quota.UsageClaim(quota.Claim{Key: "pods", Namespace: "a", Name: "web"}), "oil", cpu(100), cpu(100))
	if err != nil {
		t.Fatal(err)
	}
	wrong := whileFlipping(t, view, web, hold, 5000, func(i int) (int64, quota.Hold, error) {
		c := quota.UsageClaim(quota.Claim{Key: "pods", Namespace: "a", Name: fmt.Sprintf("other-%d", i)})
		used, hold, err := ledger.ReserveUsage(t.Context(), c, "oil", cpu(100), cpu(100))
		return used["requests.cpu"], hold, err
	}, 300)
	if len(wrong) > 0 {
		t.Errorf("of 5000 pods, these saw a sum other than 300m (two pods and web, seen or in the ledger): %v", wrong)
	}
}

// TestTwoUpdatesOfOnePodCountBothIncreasesBeforeTheFirstIsSeen: a pod of
// 200m resized to 500m, then to 700m before the view sees the first
// resize. The second is decided against the first's 500m, not the 200m
// the view still has, and the holds count 700m until the view sees it.
func TestTwoUpdatesOfOnePodCountBothIncreasesBeforeTheFirstIsSeen(t *testing.T) {
	for _, tt := range []struct {
		name   string
		ledger func(*clusterview.View) usageLedger
	}{
		{"one replica", func(v *clusterview.View) usageLedger { return quota.LocalLedger{View: v} }},
		{"strict", func(v *clusterview.View) usageLedger {
			return quota.NewStrictLedger(quotatest.NewAPIServer(), v, time.Minute)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			view := busyView(0)
			web := pod("web")
			web.Usage = cpu(200)
			view.Upsert(web)
			ledger := tt.ledger(view)
			c := quota.UsageClaim(quota.Claim{Key: "pods", Namespace: "a", Name: "web"})
			reserve := func(adds, expect int64) int64 {
				t.Helper()
				used, hold, err := ledger.ReserveUsage(t.Context(), c, "oil", cpu(adds), cpu(expect))
				if err == nil {
					err = hold.Keep(t.Context())
				}
				if err != nil {
					t.Fatal(err)
				}
				return used["requests.cpu"]
			}
			if got := reserve(300, 500); got != 200 {
				t.Fatalf("the first resize sees %dm in use, want the pod's 200m", got)
			}
			if got := reserve(200, 700); got != 500 {
				t.Fatalf("the second resize sees %dm in use, want the first resize's 500m", got)
			}
			// A pod created beside them sees the 700m the resized pod will hold.
			other := quota.UsageClaim(quota.Claim{Key: "pods", Namespace: "a", Name: "other"})
			steps := []struct {
				seen int64
				want int64
			}{{200, 700}, {500, 700}, {700, 700}}
			for _, step := range steps {
				web.Usage = cpu(step.seen)
				view.Upsert(web)
				used, hold, err := ledger.ReserveUsage(t.Context(), other, "oil", cpu(100), cpu(100))
				if err != nil {
					t.Fatal(err)
				}
				hold.Release()
				if got := used["requests.cpu"]; got != step.want {
					t.Errorf("with the pod seen at %dm, a create sees %dm in use, want %dm", step.seen, got, step.want)
				}
			}
		})
	}
}
