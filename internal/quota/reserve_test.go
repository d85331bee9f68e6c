package quota_test

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
)

// These tests reserve in a real cluster view, which keeps the Table beside
// its counts of the objects seen, as the webhook does.

const label = "tenantguard.io/tenant"

var podClaim = quota.Claim{Key: "pods", Namespace: "a", Name: "web"}

// oilView has namespace "a" of tenant oil with n pods.
func oilView(n int) *clusterview.View {
	v := clusterview.New(label)
	v.Upsert(namespace("a", "oil"))
	for i := range n {
		v.Upsert(pod(string(rune('A' + i))))
	}
	return v
}

func namespace(name, tenant string) clusterview.Object {
	return clusterview.Object{Kind: "Namespace", Resource: "namespaces", Name: name, Labels: map[string]string{label: tenant}}
}

// pod is a pod of namespace "a".
func pod(name string) clusterview.Object {
	return clusterview.Object{Kind: "Pod", Resource: "pods", Namespace: "a", Name: name}
}

// flipping has the view see o come and go, again and again, until the test
// ends.
func flipping(t *testing.T, view *clusterview.View, o clusterview.Object) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			view.Upsert(o)
			view.Delete(o)
		}
	})
	t.Cleanup(func() { close(done); wg.Wait() })
}

// whileFlipping keeps the create hold made, has the view see o come and go
// (flipping), and then reserves n other creates, each released at once:
// it tallies the answers other than want.
func whileFlipping[T comparable](t *testing.T, view *clusterview.View, o clusterview.Object, hold quota.Hold, n int, reserve func(i int) (T, quota.Hold, error), want T) map[T]int {
	t.Helper()
	if err := hold.Keep(t.Context()); err != nil {
		t.Fatal(err)
	}
	flipping(t, view, o)
	wrong := map[T]int{}
	for i := range n {
		got, h, err := reserve(i)
		if err != nil {
			t.Fatal(err)
		}
		h.Release()
		if got != want {
			wrong[got]++
		}
	}
	return wrong
}

func TestReservationsHoldPlacesInTheCounts(t *testing.T) {
	const ttl = time.Minute
	tests := []struct {
		name  string
		steps func(v *clusterview.View) int
		// want is the count steps returns; pods is oil's count after them.
		want, pods int
	}{
		{"a reservation sees the objects but not itself", func(v *clusterview.View) int {
			counts, _ := v.Reserve(podClaim, "", []string{"oil"}, ttl)
			return counts["oil"]
		}, 2, 3},
		{"a second create sees the first one's place", func(v *clusterview.View) int {
			v.Reserve(podClaim, "", []string{"oil"}, ttl)
			counts, _ := v.Reserve(quota.Claim{Key: "pods", Namespace: "a", Name: "other"}, "", []string{"oil"}, ttl)
			return counts["oil"]
		}, 3, 4},
		{"a refused create gives its place back", func(v *clusterview.View) int {
			counts, r := v.Reserve(podClaim, "", []string{"oil"}, ttl)
			r.Release()
			return counts["oil"]
		}, 2, 2},
		{"an admitted create keeps its place until it is seen", func(v *clusterview.View) int {
			counts, r := v.Reserve(podClaim, "", []string{"oil"}, ttl)
			r.Keep()
			return counts["oil"]
		}, 2, 3},
		{"the object seen takes over its place and counts once", func(v *clusterview.View) int {
			counts, r := v.Reserve(podClaim, "", []string{"oil"}, ttl)
			r.Keep()
			v.Upsert(pod("web"))
			v.Upsert(pod("web"))
			return counts["oil"]
		}, 2, 3},
		{"a retried create is one place, and seeing itself leaves it out", func(v *clusterview.View) int {
			_, first := v.Reserve(podClaim, "", []string{"oil"}, ttl)
			counts, again := v.Reserve(podClaim, "", []string{"oil"}, ttl)
			first.Keep()
			again.Release()
			return counts["oil"]
		}, 2, 3},
		{"a refused retry leaves the admitted first call's place", func(v *clusterview.View) int {
			_, first := v.Reserve(podClaim, "", []string{"oil"}, ttl)
			first.Keep()
			counts, again := v.Reserve(podClaim, "", []string{"oil"}, ttl)
			again.Release()
			return counts["oil"]
		}, 2, 3},
		{"a namespace create holds a place with every tenant it could be for", func(v *clusterview.View) int {
			counts, r := v.Reserve(quota.Claim{Key: clusterview.NamespacesKey, Name: "new"}, "", []string{"gas", "oil"}, ttl)
			r.Keep()
			return counts["oil"] + 10*v.Count("gas", clusterview.NamespacesKey)
		}, 1 + 10, 2},
		{"the namespace seen takes over every tenant's place", func(v *clusterview.View) int {
			_, r := v.Reserve(quota.Claim{Key: clusterview.NamespacesKey, Name: "new"}, "", []string{"gas", "oil"}, ttl)
			r.Keep()
			v.Upsert(namespace("new", "oil"))
			return v.Count("oil", clusterview.NamespacesKey) + 10*v.Count("gas", clusterview.NamespacesKey)
		}, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := oilView(2)
			if got := tt.steps(v); got != tt.want {
				t.Errorf("steps returned %d, want %d", got, tt.want)
			}
			if got := v.Count("oil", "pods"); got != tt.pods {
				t.Errorf("oil has %d pods counted, want %d", got, tt.pods)
			}
		})
	}
}

// TestABurstAgainstRoomForTenIsDecidedAgainstEveryEarlierCreate decides 50
// parallel creates against a quota with room for 10, as the webhook does:
// reserve, decide on the count, keep or release.
func TestABurstAgainstRoomForTenIsDecidedAgainstEveryEarlierCreate(t *testing.T) {
	const limit, existing, burst = 20, 10, 50
	v := oilView(existing)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for i := range burst {
		wg.Go(func() {
			counts, r := v.Reserve(quota.Claim{Key: "pods", Namespace: "a", Name: "burst-" + string(rune('a'+i))}, "", []string{"oil"}, time.Minute)
			if counts["oil"]+1 > limit {
				r.Release()
				return
			}
			r.Keep()
			mu.Lock()
			admitted++
			mu.Unlock()
		})
	}
	wg.Wait()
	if admitted != limit-existing {
		t.Fatalf("%d of %d creates admitted, want %d", admitted, burst, limit-existing)
	}
	if got := v.Count("oil", "pods"); got != limit {
		t.Fatalf("oil's count is %d after the burst, want %d", got, limit)
	}
}

// TestCreatesAndTheInformerCountEachObjectOnce admits creates in parallel
// while the informer reports the objects seen, each as soon as its create
// holds a place (the API server may store it before the webhook's answer is
// kept), so that every Reserve races other creates' objects being seen:
// each create sees every object once, as a hold or as an object, and each
// is counted once at the end, whether its hold was kept before or after the
// object was seen. Run it with -race (make test does).
func TestCreatesAndTheInformerCountEachObjectOnce(t *testing.T) {
	const existing, creates = 3, 200
	v := oilView(existing)
	var wg sync.WaitGroup
	for i := range creates {
		name := fmt.Sprintf("p-%d", i)
		wg.Go(func() {
			counts, r := v.Reserve(quota.Claim{Key: "pods", Namespace: "a", Name: name}, "", []string{"oil"}, time.Minute)
			if n := counts["oil"]; n < existing || n > existing+creates-1 {
				t.Errorf("a create saw a count of %d, want %d to %d: the others' objects and holds, each once", n, existing, existing+creates-1)
			}
			var both sync.WaitGroup
			both.Go(r.Keep)
			both.Go(func() { v.Upsert(pod(name)) })
			both.Go(func() { _ = v.Count("oil", "pods") })
			both.Wait()
		})
	}
	wg.Wait()
	if got := v.Count("oil", "pods"); got != existing+creates {
		t.Errorf("oil's count is %d, want %d: an object counted twice or not at all", got, existing+creates)
	}
}

// BenchmarkCreateRequests makes each request's calls on the view, in
// parallel, as the webhook does for a counted create: the namespace's
// labels, the hold, and the hold given back (a refused create),
// so that the holds do not pile up over the run.
func BenchmarkCreateRequests(b *testing.B) {
	v := oilView(10)
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			name := "p-" + strconv.FormatInt(next.Add(1), 10)
			v.NamespaceLabels("a")
			_, r := v.Reserve(quota.Claim{Key: "pods", Namespace: "a", Name: name}, "", []string{"oil"}, time.Minute)
			r.Release()
		}
	})
}

// TestAPodCreatedUnderTheNameOfOneBeingDeletedHoldsItsPlace: a StatefulSet
// pod deleted and created again under its name. The view still has the old
// pod when the new one is admitted, and the old one's late events (its
// status as it stops, then its delete) must not end the new one's hold:
// until the view sees the new pod, the tenant counts it once, and its usage.
func TestAPodCreatedUnderTheNameOfOneBeingDeletedHoldsItsPlace(t *testing.T) {
	view := clusterview.New(label)
	view.Upsert(namespace("a", "oil"))
	old := pod("web-0")
	old.UID, old.Usage = "old", cpu(100)
	view.Upsert(old)
	ctx := quota.WithObjectUID(t.Context(), "new")
	ledger := quota.LocalLedger{View: view}
	c := quota.Claim{Key: "pods", Namespace: "a", Name: "web-0"}
	_, hold, err := ledger.Reserve(ctx, c, []string{"oil"})
	if err == nil {
		err = hold.Keep(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	_, hold, err = ledger.ReserveUsage(ctx, quota.UsageClaim(c), "oil", cpu(100), cpu(100))
	if err == nil {
		err = hold.Keep(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name       string
		event      func()
		pods, used int64
	}{
		{"the old pod's late update", func() { view.Upsert(old) }, 2, 200},
		{"the old pod's delete", func() { view.Delete(old) }, 1, 100},
		{"the new pod seen", func() {
			created := pod("web-0")
			created.UID, created.Usage = "new", cpu(100)
			view.Upsert(created)
		}, 1, 100},
	}
	for _, step := range steps {
		step.event()
		if pods, used := view.Count("oil", "pods"), view.Used("oil", "requests.cpu"); int64(pods) != step.pods || used != step.used {
			t.Errorf("after %s: %d pods and %dm counted, want %d and %dm", step.name, pods, used, step.pods, step.used)
		}
	}
}
