package quota

import (
	"fmt"
	"testing"
	"time"
)

// These tests look into a Table alone, with no object seen: its clock and
// its maps are its own.

// reserve takes a hold in t as the view does, with no object seen.
func reserve(t *Table, c Claim, tenants []string, ttl time.Duration) (map[string]int, *Reservation) {
	r := t.Prepare(c, tenants, ttl)
	return r.Take(func(string, string) int { return 0 }), r
}

func TestAnAdmittedCreateNeverSeenGivesItsPlaceBackAfterTheTTL(t *testing.T) {
	table := NewTable()
	now := time.Unix(1000, 0)
	table.now = func() time.Time { return now }
	_, r := reserve(table, Claim{Key: "pods", Namespace: "a", Name: "web"}, []string{"oil"}, 30*time.Second)
	r.Keep()
	now = now.Add(29 * time.Second)
	if counts, r := reserve(table, Claim{Key: "pods", Namespace: "a", Name: "b"}, []string{"oil"}, 30*time.Second); counts["oil"] != 1 {
		t.Fatalf("before the TTL: count %d, want 1", counts["oil"])
	} else {
		r.Release()
	}
	now = now.Add(2 * time.Second)
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
