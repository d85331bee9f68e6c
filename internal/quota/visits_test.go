package quota_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/quota/quotatest"
)

// admit reserves a create of the pod name of uid in the strict ledger and
// keeps it, returning the count it was decided on.
func admit(t *testing.T, ledger *quota.StrictLedger, name, uid string) int {
	t.Helper()
	ctx := quota.WithObjectUID(t.Context(), uid)
	counts, hold, err := ledger.Reserve(ctx, quota.Claim{Key: "pods", Namespace: "a", Name: name}, []string{"oil"})
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Keep(ctx); err != nil {
		t.Fatal(err)
	}
	return counts["oil"]
}

// podOf is pod name with uid.
func podOf(name, uid string) clusterview.Object {
	o := pod(name)
	o.UID = uid
	return o
}

// TestAnObjectThatCameAndWentCountsNoMoreInTheStrictLedger: a pod admitted
// in strict mode, seen and deleted at once (a short Job's) no longer counts
// as its ledger entry, while a pod replacing one of the same name (a
// StatefulSet's) counts until it is seen, though a lagging informer sees
// the one it replaces come and go after its admission.
func TestAnObjectThatCameAndWentCountsNoMoreInTheStrictLedger(t *testing.T) {
	view := oilView(2)
	view.RememberVisits(time.Minute)
	ledger := quota.NewStrictLedger(quotatest.NewAPIServer(), view, time.Minute)
	admit(t, ledger, "job", "job-1")
	view.Upsert(podOf("job", "job-1"))
	view.Delete(podOf("job", "job-1"))
	if got := admit(t, ledger, "next", "next-1"); got != 2 {
		t.Fatalf("after a pod came and went, a create saw %d pods, want the 2 there", got)
	}

	admit(t, ledger, "db-0", "db-0-new")
	view.Upsert(podOf("db-0", "db-0-old")) // the replaced pod, seen late
	view.Delete(podOf("db-0", "db-0-old"))
	if got := admit(t, ledger, "last", "last-1"); got != 4 {
		t.Fatalf("a create saw %d pods, want 4: the 2, next's claim and the new db-0's", got)
	}
}

// TestAPodThatCameAndWentAddsNoMoreToTheStrictSums is the same for sums.
func TestAPodThatCameAndWentAddsNoMoreToTheStrictSums(t *testing.T) {
	view := busyView(10)
	view.RememberVisits(time.Minute)
	ledger := quota.NewStrictLedger(quotatest.NewAPIServer(), view, time.Minute)
	reserve := func(ctx context.Context, name string) int64 {
		used, hold, err := ledger.ReserveUsage(ctx, quota.UsageClaim(quota.Claim{Key: "pods", Namespace: "a", Name: name}), "oil", cpu(500), cpu(500))
		if err != nil {
			t.Fatal(err)
		}
		if err := hold.Keep(ctx); err != nil {
			t.Fatal(err)
		}
		return used["requests.cpu"]
	}
	reserve(quota.WithObjectUID(t.Context(), "job-1"), "job")
	job := podOf("job", "job-1")
	job.Usage = cpu(500)
	view.Upsert(job)
	view.Delete(job)
	if got := reserve(quota.WithObjectUID(t.Context(), "next-1"), "next"); got != 1000 {
		t.Fatalf("after a pod came and went, a create saw %dm in use, want the 1000m there", got)
	}
	// an entry without a uid (a ledger written before it was kept) counts
	// as it did, until it expires, though its object came and went
	reserve(t.Context(), "old")
	old := podOf("old", "old-1")
	old.Usage = cpu(500)
	view.Upsert(old)
	view.Delete(old)
	if got := reserve(t.Context(), "after"); got != 2000 {
		t.Fatalf("a create saw %dm in use, want 2000m: the 1000m there, next's and old's holds", got)
	}
}

var _ quota.Counter = (*clusterview.View)(nil)

// TestAnIngressThatCameAndWentHoldsItsHostNoMore: an Ingress admitted in
// strict mode, seen and deleted at once, frees its host for another object
// before its ledger entry expires, while one replacing an Ingress of the
// same name holds its host until it is seen, though a lagging informer sees
// the one it replaces come and go after its admission; the old one's entry
// stays beside the replacement's (it is another object's), and an entry
// without uid, of an older version, is the object's own.
func TestAnIngressThatCameAndWentHoldsItsHostNoMore(t *testing.T) {
	view := clusterview.New(label)
	view.RememberVisits(time.Minute)
	server := quotatest.NewAPIServer()
	ledger := quota.NewStrictLedger(server, view, time.Minute)
	ingress := func(name string) quota.HostClaim {
		return quota.HostClaim{Group: "networking.k8s.io", Kind: "Ingress", Namespace: "a", Name: name}
	}
	seen := func(name, uid string) *clusterview.Object {
		return &clusterview.Object{Group: "networking.k8s.io", Kind: "Ingress", Namespace: "a", Name: name, UID: uid, Hosts: []string{"shop.example.com"}}
	}
	// holders reserves shop.example.com for an Ingress of name, admitted
	// with uid when uid is set, and returns the names holding it.
	holders := func(name, uid string) []string {
		t.Helper()
		ctx := quota.WithObjectUID(t.Context(), uid)
		held, hold, err := ledger.ReserveHosts(ctx, ingress(name), []string{"shop.example.com"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if uid == "" {
			hold.Release()
		} else if err := hold.Keep(ctx); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, h := range held {
			names = append(names, h.Name)
		}
		return names
	}
	holders("preview", "preview-1")
	view.UpdateHosts(nil, seen("preview", "preview-1"))
	view.UpdateHosts(seen("preview", "preview-1"), nil)
	if got := holders("shop", ""); len(got) != 0 {
		t.Fatalf("after the Ingress came and went, its host is held by %v", got)
	}

	holders("web", "web-old")
	holders("web", "web-new")                     // deleted and created again before any was seen
	view.UpdateHosts(nil, seen("web", "web-old")) // the replaced Ingress, seen late
	view.UpdateHosts(seen("web", "web-old"), nil)
	if got := holders("shop", ""); len(got) != 1 || got[0] != "web" {
		t.Fatalf("the host is held by %v, want the new web's claim", got)
	}
	entries := func(name string) int {
		return strings.Count(server.Stored(quota.NamePrefix + "hosts.edge").Data["claims"], `"name":"`+name+`"`)
	}
	if n := entries("web"); n != 2 {
		t.Fatalf("the ledger holds %d entries of web, want the old one's and the new one's", n)
	}

	// An entry without uid (a replica of an older version wrote it) is the
	// object's own: an update of the object claims no second entry.
	_, hold, err := ledger.ReserveHosts(t.Context(), ingress("api"), []string{"shop.example.com"}, nil)
	if err == nil {
		err = hold.Keep(t.Context())
	}
	if err != nil {
		t.Fatal(err)
	}
	holders("api", "api-1")
	if n := entries("api"); n != 1 {
		t.Fatalf("the ledger holds %d entries of api, want 1", n)
	}
}
