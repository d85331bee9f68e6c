package quota_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
)

// TestTwoStrictReplicasAdmitOneObjectPerHost decides 20 parallel creates of
// Ingresses serving one host, from 20 namespaces, spread over two replicas
// that share the API server but not their views, as Admit does: reserve,
// refuse when another holds the host, keep or release, and decide again
// when the ledger of hosts changed meanwhile.
func TestTwoStrictReplicasAdmitOneObjectPerHost(t *testing.T) {
	const burst = 20
	server := &apiServer{stored: map[string]*corev1.ConfigMap{}}
	replicas := []*quota.StrictLedger{
		quota.NewStrictLedger(server, clusterview.New(label), time.Minute),
		quota.NewStrictLedger(server, clusterview.New(label), time.Minute),
	}
	var admitted, stale atomic.Int64
	var wg sync.WaitGroup
	for i := range burst {
		wg.Go(func() {
			self := quota.HostClaim{Group: "networking.k8s.io", Kind: "Ingress", Namespace: fmt.Sprintf("ns%d", i), Name: "web"}
			for {
				held, hold, err := replicas[i%2].ReserveHosts(t.Context(), self, []string{"shop.example.com"})
				if err != nil {
					t.Error(err)
					return
				}
				if len(held) > 0 {
					hold.Release()
					return
				}
				switch err := hold.Keep(t.Context()); {
				case errors.Is(err, quota.ErrStale):
					stale.Add(1)
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
	if got := admitted.Load(); got != 1 {
		t.Fatalf("%d of %d creates admitted, want 1 (%d decided again)", got, burst, stale.Load())
	}
	if cm := server.stored[quota.NamePrefix+"hosts.edge"]; cm == nil || cm.Labels[quota.TenantLabel] != "hosts.edge" {
		t.Fatalf("the ledger of hosts: %v", cm)
	}
}

func TestAClaimOnAHostHoldsItUntilTheViewSeesItsObject(t *testing.T) {
	view := clusterview.New(label)
	ledger := quota.NewStrictLedger(&apiServer{stored: map[string]*corev1.ConfigMap{}}, view, time.Minute)
	web := quota.HostClaim{Group: "networking.k8s.io", Kind: "Ingress", Namespace: "a", Name: "web"}
	other := quota.HostClaim{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute", Namespace: "b", Name: "shop"}
	reserve := func(self quota.HostClaim) []quota.HostClaim {
		t.Helper()
		held, hold, err := ledger.ReserveHosts(t.Context(), self, []string{"shop.example.com"})
		if err != nil {
			t.Fatal(err)
		}
		hold.Release()
		return held
	}
	_, hold, err := ledger.ReserveHosts(t.Context(), web, []string{"shop.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Keep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if held := reserve(other); len(held) != 1 || held[0].Name != "web" || held[0].Host != "shop.example.com" {
		t.Fatalf("another object sees %v, want web's claim", held)
	}
	if held := reserve(web); len(held) != 0 {
		t.Fatalf("the object itself sees %v, want nothing", held)
	}
	view.UpdateHosts(nil, &clusterview.Object{Group: web.Group, Kind: web.Kind, Namespace: web.Namespace, Name: web.Name, Hosts: []string{"shop.example.com"}})
	if held := reserve(other); len(held) != 0 {
		t.Fatalf("once the view serves web's host, the ledger still holds %v", held)
	}
}
