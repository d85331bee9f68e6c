package quota_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
)

// admit reserves a create of claim c in the strict ledger and keeps it,
// returning the count it was decided on.
func admit(t *testing.T, ledger *quota.StrictLedger, name string) int {
	t.Helper()
	counts, hold, err := ledger.Reserve(t.Context(), quota.Claim{Key: "pods", Namespace: "a", Name: name}, []string{"oil"})
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Keep(t.Context()); err != nil {
		t.Fatal(err)
	}
	return counts["oil"]
}

// TestAnObjectThatCameAndWentCountsNoMoreInTheStrictLedger: a pod admitted
// in strict mode, seen and deleted at once (a short Job's) no longer counts
// as its ledger entry, while a pod replacing one of the same name (a
// StatefulSet's) counts until it is seen, though the one it replaces goes
// after its admission.
func TestAnObjectThatCameAndWentCountsNoMoreInTheStrictLedger(t *testing.T) {
	view := oilView(2)
	view.RememberVisits(time.Minute)
	ledger := quota.NewStrictLedger(&apiServer{stored: map[string]*corev1.ConfigMap{}}, view, time.Minute)
	admit(t, ledger, "job")
	time.Sleep(time.Millisecond) // the pod arrives after its admission
	view.Upsert(pod("job"))
	view.Delete(pod("job"))
	if got := admit(t, ledger, "next"); got != 2 {
		t.Fatalf("after a pod came and went, a create saw %d pods, want the 2 there", got)
	}

	view.Upsert(pod("db-0")) // a StatefulSet's pod, seen before its replacement is admitted
	time.Sleep(time.Millisecond)
	admit(t, ledger, "db-0")
	view.Delete(pod("db-0")) // the old one's going, seen after the new one's admission
	if got := admit(t, ledger, "last"); got != 4 {
		t.Fatalf("a create saw %d pods, want 4: the 2, next's claim and the new db-0's", got)
	}
}

// TestAPodThatCameAndWentAddsNoMoreToTheStrictSums is the same for sums.
func TestAPodThatCameAndWentAddsNoMoreToTheStrictSums(t *testing.T) {
	view := busyView(10)
	view.RememberVisits(time.Minute)
	ledger := quota.NewStrictLedger(&apiServer{stored: map[string]*corev1.ConfigMap{}}, view, time.Minute)
	reserve := func(name string) int64 {
		used, hold, err := ledger.ReserveUsage(t.Context(), quota.UsageClaim(quota.Claim{Key: "pods", Namespace: "a", Name: name}), "oil", cpu(500), cpu(500))
		if err != nil {
			t.Fatal(err)
		}
		if err := hold.Keep(t.Context()); err != nil {
			t.Fatal(err)
		}
		return used["requests.cpu"]
	}
	reserve("job")
	time.Sleep(time.Millisecond)
	job := pod("job")
	job.Usage = cpu(500)
	view.Upsert(job)
	view.Delete(job)
	if got := reserve("next"); got != 1000 {
		t.Fatalf("after a pod came and went, a create saw %dm in use, want the 1000m there", got)
	}
}

var _ quota.Counter = (*clusterview.View)(nil)
