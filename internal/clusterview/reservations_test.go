package clusterview

import (
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/internal/quota"
)

// TestReadsDoNotWaitForAHoldBeingWritten holds the reservations' lock, as a
// create does while its hold is written (and as long as its goroutine is
// descheduled there): the reads every request makes must not wait for it.
// (They still wait behind an informer's update waiting for a Reserve that
// holds the read lock; informer updates are rare beside requests.) The lock
// is the view's table's, held by a hold whose count of the objects seen
// does not return until the test ends.
func TestReadsDoNotWaitForAHoldBeingWritten(t *testing.T) {
	v := New(label)
	v.Upsert(ns("a", "oil"))
	v.Upsert(pod("a", "A"))
	holding, release, taken := make(chan struct{}), make(chan struct{}), make(chan struct{})
	r := v.reservations.Prepare(quota.Claim{Key: "pods", Namespace: "a", Name: "web"}, "", []string{"oil"}, time.Minute)
	go func() {
		defer close(taken)
		r.Take(func(string, string) int {
			close(holding)
			<-release
			return 0
		})
	}()
	<-holding
	defer func() {
		close(release)
		<-taken
	}()
	done := make(chan []bool, 1)
	go func() {
		_, labelled := v.NamespaceLabels("a")
		_, class := v.PriorityClass("tenant-low")
		done <- []bool{labelled, !class, v.Seen(quota.Claim{Key: "pods", Namespace: "a", Name: "A"})}
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
