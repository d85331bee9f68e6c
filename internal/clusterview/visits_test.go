package clusterview

import (
	"fmt"
	"testing"
	"time"
)

// TestVisitsAreForgottenPastTheHorizon: the arrivals the strict ledger no
// longer needs (every entry admitted before them has expired) are dropped,
// so that the view holds only a horizon's worth of them.
func TestVisitsAreForgottenPastTheHorizon(t *testing.T) {
	v := New("tenantguard.io/tenant")
	v.RememberVisits(time.Minute)
	now := time.Unix(1700000000, 0)
	v.visits.now = func() time.Time { return now }
	v.Upsert(Object{Kind: "Namespace", Name: "a", UID: "uid-a", Labels: map[string]string{"tenantguard.io/tenant": "oil"}})
	for i := range 1000 {
		v.Upsert(Object{Kind: "Pod", Resource: "pods", Namespace: "a", Name: fmt.Sprint(i), UID: fmt.Sprint("uid-", i)})
	}
	v.Delete(Object{Kind: "Pod", Resource: "pods", Namespace: "a", Name: "7", UID: "uid-7"})
	if n := len(v.visits.byID); n != 1001 {
		t.Fatalf("%d visits remembered within the horizon, want the 1001 arrivals", n)
	}
	now = now.Add(2 * time.Minute)
	v.Upsert(Object{Kind: "Pod", Resource: "pods", Namespace: "a", Name: "late", UID: "uid-late"})
	if n, m := len(v.visits.byID), len(v.visits.order); n != 1 || m != 1 {
		t.Fatalf("%d visits and %d arrivals remembered past the horizon, want only the last one", n, m)
	}
}
