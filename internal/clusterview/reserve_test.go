package clusterview

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var podClaim = Claim{Key: "pods", Namespace: "a", Name: "web"}

// oilView has namespace "a" of tenant oil with n pods.
func oilView(n int) *View {
	v := New(label)
	v.Upsert(ns("a", "oil"))
	for i := range n {
		v.Upsert(pod("a", string(rune('A'+i))))
	}
	return v
}

func TestReservationsHoldPlacesInTheCounts(t *testing.T) {
	const ttl = time.Minute
	tests := []struct {
		name  string
		steps func(v *View) int
		// want is the count steps returns; pods is oil's count after them.
		want, pods int
	}{
		{"a reservation sees the objects but not itself", func(v *View) int {
			counts, _ := v.Reserve(podClaim, []string{"oil"}, ttl)
			return counts["oil"]
		}, 2, 3},
		{"a second create sees the first one's place", func(v *View) int {
			v.Reserve(podClaim, []string{"oil"}, ttl)
			counts, _ := v.Reserve(Claim{Key: "pods", Namespace: "a", Name: "other"}, []string{"oil"}, ttl)
			return counts["oil"]
		}, 3, 4},
		{"a refused create gives its place back", func(v *View) int {
			counts, r := v.Reserve(podClaim, []string{"oil"}, ttl)
			r.Release()
			return counts["oil"]
		}, 2, 2},
		{"an admitted create keeps its place until it is seen", func(v *View) int {
			counts, r := v.Reserve(podClaim, []string{"oil"}, ttl)
			r.Keep()
			return counts["oil"]
		}, 2, 3},
		{"the object seen takes over its place and counts once", func(v *View) int {
			counts, r := v.Reserve(podClaim, []string{"oil"}, ttl)
			r.Keep()
			v.Upsert(pod("a", "web"))
			v.Upsert(pod("a", "web"))
			return counts["oil"]
		}, 2, 3},
		{"a retried create is one place, and seeing itself leaves it out", func(v *View) int {
			_, first := v.Reserve(podClaim, []string{"oil"}, ttl)
			counts, again := v.Reserve(podClaim, []string{"oil"}, ttl)
			first.Keep()
			again.Release()
			return counts["oil"]
		}, 2, 3},
		{"a refused retry leaves the admitted first call's place", func(v *View) int {
			_, first := v.Reserve(podClaim, []string{"oil"}, ttl)
			first.Keep()
			counts, again := v.Reserve(podClaim, []string{"oil"}, ttl)
			again.Release()
			return counts["oil"]
		}, 2, 3},
		{"a namespace create holds a place with every tenant it could be for", func(v *View) int {
			counts, r := v.Reserve(Claim{Key: NamespacesKey, Name: "new"}, []string{"gas", "oil"}, ttl)
			r.Keep()
			return counts["oil"] + 10*v.Count("gas", NamespacesKey)
		}, 1 + 10, 2},
		{"the namespace seen takes over every tenant's place", func(v *View) int {
			_, r := v.Reserve(Claim{Key: NamespacesKey, Name: "new"}, []string{"gas", "oil"}, ttl)
			r.Keep()
			v.Upsert(ns("new", "oil"))
			return v.Count("oil", NamespacesKey) + 10*v.Count("gas", NamespacesKey)
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

func TestAnAdmittedCreateNeverSeenGivesItsPlaceBackAfterTheTTL(t *testing.T) {
	v := oilView(0)
	now := time.Unix(1000, 0)
	v.now = func() time.Time { return now }
	_, r := v.Reserve(podClaim, []string{"oil"}, 30*time.Second)
	r.Keep()
	now = now.Add(29 * time.Second)
	if counts, r := v.Reserve(Claim{Key: "pods", Namespace: "a", Name: "b"}, []string{"oil"}, 30*time.Second); counts["oil"] != 1 {
		t.Fatalf("before the TTL: count %d, want 1", counts["oil"])
	} else {
		r.Release()
	}
	now = now.Add(2 * time.Second)
	if counts, _ := v.Reserve(Claim{Key: "pods", Namespace: "a", Name: "c"}, []string{"oil"}, 30*time.Second); counts["oil"] != 0 {
		t.Fatalf("after the TTL: count %d, want 0", counts["oil"])
	}
	if got := v.Reserved("oil", "pods"); got != 1 {
		t.Fatalf("%d places held after the TTL, want 1 (the create being decided)", got)
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
			counts, r := v.Reserve(Claim{Key: "pods", Namespace: "a", Name: "burst-" + string(rune('a'+i))}, []string{"oil"}, time.Minute)
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

func TestAGivenBackReservationLeavesNoTraceOfItsTenantName(t *testing.T) {
	v := New("tenant")
	// A namespace create may name any tenant in its label; each name must
	// not stay in the view once its reservation is given back.
	for i := range 100 {
		_, r := v.Reserve(Claim{Key: NamespacesKey, Name: fmt.Sprintf("ns-%d", i)}, []string{fmt.Sprintf("nobody-%d", i)}, time.Minute)
		r.Release()
	}
	if len(v.pending) != 0 || len(v.reserved) != 0 {
		t.Errorf("pending %v, reserved %d after every reservation was given back", v.pending, len(v.reserved))
	}
}

// TestReadsDoNotWaitForAHoldBeingWritten holds the reservations' lock, as a
// create does while its hold is written (and as long as its goroutine is
// descheduled there): the reads every request makes must not wait for it.
// (They still wait behind an informer's update waiting for a Reserve that
// holds the read lock; informer updates are rare beside requests.)
func TestReadsDoNotWaitForAHoldBeingWritten(t *testing.T) {
	v := oilView(1)
	v.res.Lock()
	defer v.res.Unlock()
	done := make(chan []bool, 1)
	go func() {
		_, labelled := v.NamespaceLabels("a")
		_, memo, _ := v.Namespace("a", func(string, Labels) any { return 1 })
		_, class := v.PriorityClass("tenant-low")
		done <- []bool{labelled, memo == 1, !class, v.Seen(Claim{Key: "pods", Namespace: "a", Name: "A"})}
	}()
	select {
	case got := <-done:
		for i, ok := range got {
			if !ok {
				t.Errorf("read %d answered wrong while a hold was being written", i)
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reads waited for the reservations' lock")
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
			counts, r := v.Reserve(Claim{Key: "pods", Namespace: "a", Name: name}, []string{"oil"}, time.Minute)
			if n := counts["oil"]; n < existing || n > existing+creates-1 {
				t.Errorf("a create saw a count of %d, want %d to %d: the others' objects and holds, each once", n, existing, existing+creates-1)
			}
			var both sync.WaitGroup
			both.Go(r.Keep)
			both.Go(func() { v.Upsert(pod("a", name)) })
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
// labels, its memo, the hold, and the hold given back (a refused create),
// so that the holds do not pile up over the run.
func BenchmarkCreateRequests(b *testing.B) {
	v := oilView(10)
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			name := "p-" + strconv.FormatInt(next.Add(1), 10)
			v.NamespaceLabels("a")
			v.Namespace("a", func(string, Labels) any { return 1 })
			_, r := v.Reserve(Claim{Key: "pods", Namespace: "a", Name: name}, []string{"oil"}, time.Minute)
			r.Release()
		}
	})
}
