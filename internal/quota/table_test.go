package quota

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/internal/usage"
)

// These tests look into a Table alone, with no object seen: its clock and
// its maps are its own.

// reserve takes a hold in t as the view does, with no object seen.
func reserve(t *Table, c Claim, tenants []string, ttl time.Duration) (map[string]int, *Reservation) {
	r := t.Prepare(c, "", tenants, ttl)
	return r.Take(func(string, string) int { return 0 }), r
}

// keptOnAClock is a table, on a clock the test moves, holding an admitted
// create of oil's pods with a TTL of 30 s.
func keptOnAClock() (*Table, *time.Time) {
	table := NewTable()
	now := time.Unix(1000, 0)
	table.now = func() time.Time { return now }
	_, r := reserve(table, Claim{Key: "pods", Namespace: "a", Name: "web"}, []string{"oil"}, 30*time.Second)
	r.Keep()
	return table, &now
}

func TestAnAdmittedCreateNeverSeenGivesItsPlaceBackAfterTheTTL(t *testing.T) {
	table, now := keptOnAClock()
	*now = now.Add(29 * time.Second)
	if counts, r := reserve(table, Claim{Key: "pods", Namespace: "a", Name: "b"}, []string{"oil"}, 30*time.Second); counts["oil"] != 1 {
		t.Fatalf("before the TTL: count %d, want 1", counts["oil"])
	} else {
		r.Release()
	}
	*now = now.Add(2 * time.Second)
	if counts, _ := reserve(table, Claim{Key: "pods", Namespace: "a", Name: "c"}, []string{"oil"}, 30*time.Second); counts["oil"] != 0 {
		t.Fatalf("after the TTL: count %d, want 0", counts["oil"])
	}
	if got := table.Reserved("oil", "pods"); got != 1 {
		t.Fatalf("%d places held after the TTL, want 1 (the create being decided)", got)
	}
}

func TestAGivenBackReservationLeavesNoTraceOfItsTenantName(t *testing.T) {
	table := NewTable()
	// A namespace create may name any tenant in its label; each name must
	// not stay in the table once its reservation is given back.
	for i := range 100 {
		_, r := reserve(table, Claim{Key: "namespaces", Name: fmt.Sprintf("ns-%d", i)}, []string{fmt.Sprintf("nobody-%d", i)}, time.Minute)
		r.Release()
	}
	if len(table.pending) != 0 || len(table.held) != 0 {
		t.Errorf("pending %v, held %d after every reservation was given back", table.pending, len(table.held))
	}
}

// TestAdmittedCountsOnlyTheCreatesAdmitted follows one claim's place
// through its life: Reserved counts it from the start, Admitted only once
// a decision admitted it, until the object is seen or its hold expires. A
// second decision of the same claim (the API server retrying the create)
// does not count it twice.
func TestAdmittedCountsOnlyTheCreatesAdmitted(t *testing.T) {
	pod := Claim{Key: "pods", Namespace: "a", Name: "web"}
	pod2 := Claim{Key: "pods", Namespace: "a", Name: "db"}
	// take is a create of c by tenant oil taking its place, being decided.
	take := func(tb *Table, c Claim) *Reservation {
		_, r := reserve(tb, c, []string{"oil"}, time.Minute)
		return r
	}
	tests := []struct {
		name                   string
		steps                  func(*Table, func(time.Duration))
		wantReserved, wantKept int
	}{
		{"a create being decided is reserved, not admitted", func(tb *Table, _ func(time.Duration)) {
			take(tb, pod)
		}, 1, 0},
		{"a create admitted is both", func(tb *Table, _ func(time.Duration)) {
			take(tb, pod).Keep()
		}, 1, 1},
		{"a create refused is neither", func(tb *Table, _ func(time.Duration)) {
			take(tb, pod).Release()
		}, 0, 0},
		{"a create admitted then seen is neither", func(tb *Table, _ func(time.Duration)) {
			take(tb, pod).Keep()
			tb.TakeOver(pod, "")
		}, 0, 0},
		{"a create admitted whose hold expired is neither", func(tb *Table, pass func(time.Duration)) {
			take(tb, pod).Keep()
			pass(2 * time.Minute)
			take(tb, pod2).Release() // the next hold taken drops the expired ones
		}, 0, 0},
		{"a create admitted, retried and refused the second time counts once", func(tb *Table, _ func(time.Duration)) {
			take(tb, pod).Keep()
			take(tb, pod).Release()
		}, 1, 1},
		{"a create admitted twice (retried) counts once", func(tb *Table, _ func(time.Duration)) {
			take(tb, pod).Keep()
			take(tb, pod).Keep()
		}, 1, 1},
		{"a create admitted beside one being decided", func(tb *Table, _ func(time.Duration)) {
			take(tb, pod).Keep()
			take(tb, pod2)
		}, 2, 1},
		{"what a resources hold adds counts by resource", func(tb *Table, _ func(time.Duration)) {
			takeUsage(tb, pod, nil, 3, 3).Keep()
		}, 3, 3},
		{"a resources hold adds what it expects over the object's usage seen", func(tb *Table, _ func(time.Duration)) {
			takeUsage(tb, pod, pods(1), 2, 3).Keep()
		}, 2, 2},
		{"a second update decided before the first is seen counts both increases", func(tb *Table, _ func(time.Duration)) {
			takeUsage(tb, pod, pods(1), 2, 3).Keep()
			takeUsage(tb, pod, pods(1), 2, 5)
		}, 4, 4},
		{"a second update refused leaves the first's hold as it was", func(tb *Table, _ func(time.Duration)) {
			takeUsage(tb, pod, pods(1), 2, 3).Keep()
			takeUsage(tb, pod, pods(1), 2, 5).Release()
		}, 2, 2},
		{"a second update refused after the first was seen in part leaves what the first expects over it", func(tb *Table, _ func(time.Duration)) {
			takeUsage(tb, pod, pods(1), 2, 4).Keep()
			second := takeUsage(tb, pod, pods(1), 2, 6)
			tb.TakeOverObject(pod, "", pods(3))
			second.Release()
		}, 1, 1},
		{"a second update retried, the first try refused, keeps both increases", func(tb *Table, _ func(time.Duration)) {
			takeUsage(tb, pod, pods(1), 2, 3).Keep()
			first := takeUsage(tb, pod, pods(1), 2, 5)
			retry := takeUsage(tb, pod, pods(1), 2, 5)
			first.Release()
			retry.Keep()
		}, 4, 4},
		{"of three updates decided at once, the largest refused leaves the hold as large as it", func(tb *Table, _ func(time.Duration)) {
			takeUsage(tb, pod, pods(1), 2, 3).Keep()
			largest := takeUsage(tb, pod, pods(1), 4, 5)
			third := takeUsage(tb, pod, pods(1), 3, 4)
			largest.Release()
			third.Keep()
		}, 4, 4},
		{"a release after the place was taken over leaves the next request's place", func(tb *Table, _ func(time.Duration)) {
			first := take(tb, pod)
			tb.TakeOver(pod, "") // its object seen: a retried create stored meanwhile
			take(tb, pod)        // another create of the name, being decided
			first.Release()
		}, 1, 0},
		{"a keep after the place was taken over leaves the next request's place being decided", func(tb *Table, _ func(time.Duration)) {
			first := take(tb, pod)
			tb.TakeOver(pod, "")
			take(tb, pod)
			first.Keep()
		}, 1, 0},
		{"a create's place outlives the events of another object of its name", func(tb *Table, _ func(time.Duration)) {
			r := tb.Prepare(pod, "new", []string{"oil"}, time.Minute)
			r.Take(func(string, string) int { return 0 })
			r.Keep()
			tb.TakeOver(pod, "old") // the object of the name being deleted
		}, 1, 1},
		{"a create's place ends when its object is seen", func(tb *Table, _ func(time.Duration)) {
			r := tb.Prepare(pod, "new", []string{"oil"}, time.Minute)
			r.Take(func(string, string) int { return 0 })
			r.Keep()
			tb.TakeOver(pod, "new")
		}, 0, 0},
		{"an event of another object of its name makes a resources hold count all it expects", func(tb *Table, _ func(time.Duration)) {
			takeUsageOf(tb, pod, "new", pods(1), 3, 3).Keep()
			tb.TakeOverObject(pod, "old", pods(3))
		}, 3, 3},
		{"another object of its name gone makes a resources hold count all it expects", func(tb *Table, _ func(time.Duration)) {
			takeUsageOf(tb, pod, "new", pods(1), 3, 3).Keep()
			tb.UsageGone(UsageClaim(pod), "old")
		}, 3, 3},
		{"the object of a resources hold gone ends it", func(tb *Table, _ func(time.Duration)) {
			takeUsageOf(tb, pod, "web", pods(1), 2, 3).Keep()
			tb.UsageGone(UsageClaim(pod), "web")
		}, 0, 0},
		{"a place held for two objects of one name knows neither", func(tb *Table, _ func(time.Duration)) {
			takeUsageOf(tb, pod, "old", pods(1), 2, 3).Keep()
			takeUsageOf(tb, pod, "new", pods(1), 2, 3).Keep()
			tb.TakeOverObject(pod, "old", pods(3))
		}, 0, 0},
		{"once the first update is seen the hold adds the second's increase", func(tb *Table, _ func(time.Duration)) {
			takeUsage(tb, pod, pods(1), 2, 3).Keep()
			takeUsage(tb, pod, pods(1), 2, 5).Keep()
			tb.TakeOverObject(pod, "", pods(3))
		}, 2, 2},
		{"once the last update is seen the hold ends", func(tb *Table, _ func(time.Duration)) {
			takeUsage(tb, pod, pods(1), 2, 3).Keep()
			takeUsage(tb, pod, pods(1), 2, 5).Keep()
			tb.TakeOverObject(pod, "", pods(5))
		}, 0, 0},
		{"an object deleted while its update is held makes the hold count all it expects", func(tb *Table, _ func(time.Duration)) {
			takeUsage(tb, pod, pods(1), 2, 3).Keep()
			tb.UsageGone(UsageClaim(pod), "")
		}, 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := NewTable()
			now := time.Unix(1000, 0)
			table.now = func() time.Time { return now }
			tt.steps(table, func(d time.Duration) { now = now.Add(d) })
			if got := table.Reserved("oil", "pods"); got != tt.wantReserved {
				t.Errorf("reserved %d, want %d", got, tt.wantReserved)
			}
			if got := table.Admitted("oil", "pods"); got != tt.wantKept {
				t.Errorf("admitted %d, want %d", got, tt.wantKept)
			}
		})
	}
}

// TestAHoldPastItsTTLCountsNoMoreWithoutAnotherReservation: the counts the
// metrics, status and the audit read drop an admitted create never seen
// once its TTL is up, though no other create of the tenant comes.
func TestAHoldPastItsTTLCountsNoMoreWithoutAnotherReservation(t *testing.T) {
	table, now := keptOnAClock()
	if reserved, admitted := table.Reserved("oil", "pods"), table.Admitted("oil", "pods"); reserved != 1 || admitted != 1 {
		t.Fatalf("within the TTL: reserved %d, admitted %d, want 1 and 1", reserved, admitted)
	}
	*now = now.Add(31 * time.Second)
	if reserved, admitted := table.Reserved("oil", "pods"), table.Admitted("oil", "pods"); reserved != 0 || admitted != 0 {
		t.Fatalf("past the TTL: reserved %d, admitted %d, want 0 and 0", reserved, admitted)
	}
}

// pods is a usage of n under the key "pods", which the table's cases read.
func pods(n int64) usage.List { return usage.List{{Key: "pods", N: n}} }

// takeUsage takes a resources hold of c's object, seen with usage own, for
// a request that adds adds by its own account and expects the object to
// hold expect, all under the key "pods".
func takeUsage(tb *Table, c Claim, own usage.List, adds, expect int64) *Reservation {
	return takeUsageOf(tb, c, "", own, adds, expect)
}

// takeUsageOf is takeUsage for the object of uid.
func takeUsageOf(tb *Table, c Claim, uid string, own usage.List, adds, expect int64) *Reservation {
	r := tb.PrepareUsage(UsageClaim(c), uid, "oil", pods(adds), pods(expect), time.Minute)
	r.TakeUsage(func(string, string) int { return 0 }, own)
	return r
}
