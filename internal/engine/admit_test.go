package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/quota/quotatest"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/scale"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// roomForTen is tenant t0 with 190 pods counted (quota: 200 pods) and its
// 10 namespaces (quota: 10).
func roomForTen() *clusterview.View {
	v := clusterview.New("tenantguard.io/tenant")
	scale.Fill(v, 1, 10, 19)
	return v
}

func TestABurstOfFiftyCreatesAgainstRoomForTenAdmitsExactlyTen(t *testing.T) {
	e, err := New(t.Context(), scaleRegistry(t, 1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	view := roomForTen()
	if admitted := burstOf(t, e, view, podSpec, "tenant-quota"); admitted != 10 {
		t.Fatalf("%d of 50 creates admitted, want 10", admitted)
	}
	if got := view.Reserved("t0", "pods"); got != 10 {
		t.Fatalf("%d places held after the burst, want the 10 admitted", got)
	}
}

// burstOf admits 50 pod creates of spec (in t0-ns3, named burst-N) at once
// through the view's local ledger and returns how many were admitted; a
// refusal by anything but rule alone fails the test.
func burstOf(t *testing.T, e *Engine, view *clusterview.View, spec, rule string) int {
	t.Helper()
	ledger := quota.LocalLedger{View: view}
	var wg sync.WaitGroup
	decisions := make([]*admission.Decision, 50)
	errs := make([]error, 50)
	for i := range decisions {
		wg.Go(func() {
			req := podCreate(t, 0, spec)
			req.Name = fmt.Sprintf("burst-%d", i)
			decisions[i], errs[i] = e.Admit(t.Context(), req, view, ledger)
		})
	}
	wg.Wait()
	admitted := 0
	for i, d := range decisions {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if d.Allowed {
			admitted++
			continue
		}
		if len(d.Deny) != 1 || d.Deny[0].ID != rule {
			t.Fatalf("create %d refused with %v, want only %s", i, d.Deny, rule)
		}
	}
	return admitted
}

func TestOnlyCountedCreatesThatAreStoredReserve(t *testing.T) {
	e, err := New(t.Context(), scaleRegistry(t, 1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	tests := []struct {
		name    string
		spec    string
		dryRun  bool
		allowed bool
		held    int
	}{
		{"an admitted create holds its place", podSpec, false, true, 1},
		{"a dry-run create holds nothing", podSpec, true, true, 0},
		{"a create refused by another rule gives its place back", strings.Replace(podSpec, `"containers"`, `"hostNetwork":true,"containers"`, 1), false, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			view := roomForTen()
			req := podCreate(t, 0, tt.spec)
			if tt.dryRun {
				req.DryRun = &yes
			}
			d, err := e.Admit(t.Context(), req, view, quota.LocalLedger{View: view})
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tt.allowed {
				t.Fatalf("allowed %v, want %v (%v)", d.Allowed, tt.allowed, d.Deny)
			}
			if got := view.Reserved("t0", "pods"); got != tt.held {
				t.Fatalf("%d places held, want %d", got, tt.held)
			}
		})
	}
}

// staleOnce is a ledger whose first Keep finds the counts changed, as when
// another replica admitted a create first.
type staleOnce struct {
	quota.LocalLedger
	mu       sync.Mutex
	reserves int
}

func (l *staleOnce) Reserve(ctx context.Context, c quota.Claim, tenants []string) (map[string]int, quota.Hold, error) {
	counts, hold, err := l.LocalLedger.Reserve(ctx, c, tenants)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reserves++
	if l.reserves == 1 {
		return counts, staleHold{hold}, err
	}
	return counts, hold, err
}

type staleHold struct{ quota.Hold }

func (staleHold) Keep(context.Context) error { return quota.ErrStale }

func TestACreateDecidedOnStaleCountsIsDecidedAgain(t *testing.T) {
	e, err := New(t.Context(), scaleRegistry(t, 1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	view := roomForTen()
	ledger := &staleOnce{LocalLedger: quota.LocalLedger{View: view}}
	d, err := e.Admit(t.Context(), podCreate(t, 0, podSpec), view, ledger)
	if err != nil || !d.Allowed {
		t.Fatalf("allowed %v, error %v; want allowed", d != nil && d.Allowed, err)
	}
	if ledger.reserves != 2 {
		t.Fatalf("%d reservations, want 2 (the stale one and the retry)", ledger.reserves)
	}
	if got := view.Reserved("t0", "pods"); got != 1 {
		t.Fatalf("%d places held, want 1", got)
	}
}

func TestAnAdmittedNamespaceGivesItsPlaceToTheNamespaceSeen(t *testing.T) {
	e, err := New(t.Context(), scaleRegistry(t, 1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	view := roomForTen()
	// As the API server sends it: request.namespace is the namespace's name.
	req, err := admission.Decode([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"n","kind":{"group":"","version":"v1","kind":"Namespace"},"resource":{"group":"","version":"v1","resource":"namespaces"},"namespace":"t0-new","name":"t0-new","operation":"CREATE","userInfo":{"username":"u0"},"object":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"t0-new","labels":{"tenantguard.io/tenant":"t0"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	before := view.Count("t0", clusterview.NamespacesKey)
	d, err := e.Admit(t.Context(), req, view, quota.LocalLedger{View: view})
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed {
		t.Fatalf("t0 has its 10 namespaces; the 11th was allowed")
	}
	// Room for one more namespace, then the namespace arrives.
	view.Delete(clusterview.Object{Kind: "Namespace", Resource: "namespaces", Name: "t0-ns9"})
	if d, err = e.Admit(t.Context(), req, view, quota.LocalLedger{View: view}); err != nil || !d.Allowed {
		t.Fatalf("allowed %v, error %v, deny %v", d != nil && d.Allowed, err, d)
	}
	view.Upsert(clusterview.Object{Kind: "Namespace", Resource: "namespaces", Name: "t0-new", Labels: map[string]string{"tenantguard.io/tenant": "t0"}})
	if got := view.Count("t0", clusterview.NamespacesKey); got != before {
		t.Fatalf("t0 counts %d namespaces, want %d: the namespace seen must take over its place", got, before)
	}
}

// TestAPodRefusedAfterItsSumsWereKeptWithdrawsThem: in strict mode a pod's
// place in its tenant's sums is kept before its place in the counts; when
// another replica takes the last place meanwhile, the pod is decided again
// and refused, and what it would have added leaves the ledger of usage at
// once, not when its entry expires.
func TestAPodRefusedAfterItsSumsWereKeptWithdrawsThem(t *testing.T) {
	e, err := New(t.Context(), scaleRegistry(t, 1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	view := roomForTen()
	server := quotatest.NewAPIServer()
	ledger := quota.NewStrictLedger(server, view, time.Minute)
	other := quota.NewStrictLedger(server, view, time.Minute)
	admitElsewhere := func(i int) { admitElsewhere(t, other, fmt.Sprintf("elsewhere-%d", i)) }
	for i := range 9 {
		admitElsewhere(i)
	}
	counts := quota.NamePrefix + "t0"
	server.BeforeUpdate = func(name string) {
		if name == counts {
			server.BeforeUpdate = nil
			admitElsewhere(9) // the last place, between this replica's read and write
		}
	}
	d, err := e.Admit(t.Context(), podCreate(t, 0, podSpec), view, ledger)
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed || len(d.Deny) != 1 || d.Deny[0].ID != "tenant-quota" {
		t.Fatalf("decision %+v, want a tenant-quota refusal", d)
	}
	if server.BeforeUpdate != nil {
		t.Fatal("the other replica never took the last place")
	}
	// The entry is withdrawn once the refusal is answered.
	waitForNoSums(t, server)
}

// waitForNoSums waits up to 5 s for t0's ledger of usage to hold no entry.
func waitForNoSums(t *testing.T, server *quotatest.APIServer) {
	t.Helper()
	claims := ""
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		cm := server.Stored(quota.NamePrefix + "t0.usage")
		if cm == nil {
			t.Fatal("the pod's sums were never kept: the test does not reach the case")
		}
		if claims = cm.Data["claims"]; claims == "[]" {
			return
		}
	}
	t.Fatalf("the ledger of usage holds %s 5 s after the pod was refused, want nothing", claims)
}

// admitElsewhere is another replica admitting a pod named name in t0-ns1.
func admitElsewhere(t *testing.T, other quota.Ledger, name string) {
	t.Helper()
	_, hold, err := other.Reserve(t.Context(), quota.Claim{Key: "pods", Namespace: "t0-ns1", Name: name}, []string{"t0"})
	if err == nil {
		err = hold.Keep(t.Context())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// failingUpdates is an API server whose updates of one ConfigMap fail.
type failingUpdates struct {
	*quotatest.APIServer
	name string
}

func (s failingUpdates) Update(ctx context.Context, cm *corev1.ConfigMap, opts metav1.UpdateOptions) (*corev1.ConfigMap, error) {
	if cm.Name == s.name {
		return nil, apierrors.NewInternalError(errors.New("etcd is away"))
	}
	return s.APIServer.Update(ctx, cm, opts)
}

// TestAPodWhoseCountsCannotBeKeptWithdrawsItsSums: a pod whose place in the
// sums was kept but whose place in the counts could not be written is
// answered [internal], a refusal: what it would have added leaves the
// ledger of usage once answered.
func TestAPodWhoseCountsCannotBeKeptWithdrawsItsSums(t *testing.T) {
	e, err := New(t.Context(), scaleRegistry(t, 1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	view := roomForTen()
	server := quotatest.NewAPIServer()
	// another replica's create makes the ledger of counts, which is then updated
	admitElsewhere(t, quota.NewStrictLedger(server, view, time.Minute), "elsewhere")
	ledger := quota.NewStrictLedger(failingUpdates{server, quota.NamePrefix + "t0"}, view, time.Minute)
	if _, err := e.Admit(t.Context(), podCreate(t, 0, podSpec), view, ledger); err == nil {
		t.Fatal("the pod was decided though its place in the counts could not be written")
	}
	waitForNoSums(t, server)
}

// reserving is a ledger that records the tenants each create holds a place
// in.
type reserving struct {
	quota.LocalLedger
	mu      sync.Mutex
	tenants [][]string
}

func (l *reserving) Reserve(ctx context.Context, c quota.Claim, tenants []string) (map[string]int, quota.Hold, error) {
	l.mu.Lock()
	l.tenants = append(l.tenants, tenants)
	l.mu.Unlock()
	return l.LocalLedger.Reserve(ctx, c, tenants)
}

// TestANamespaceCreateHoldsPlacesInRegisteredTenantsOnly: the tenant label
// of a namespace create is anyone's text, dots included, which the strict
// ledger's names give a meaning ("t0.usage" is t0's ledger of sums): only
// tenants of the registry, which have quotas, are held in.
func TestANamespaceCreateHoldsPlacesInRegisteredTenantsOnly(t *testing.T) {
	e, err := New(t.Context(), scaleRegistry(t, 2), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"t0.usage", "hosts.edge", "t1"} {
		view := roomForTen()
		ledger := &reserving{LocalLedger: quota.LocalLedger{View: view}}
		if _, err := e.Admit(t.Context(), namespaceCreate(t, "t0-new", `{"`+registry.DefaultTenantLabel+`":"`+label+`"}`), view, ledger); err != nil {
			t.Fatal(err)
		}
		want := []string{"t0"}
		if label == "t1" {
			want = []string{"t0", "t1"}
		}
		if len(ledger.tenants) != 1 || !slices.Equal(ledger.tenants[0], want) {
			t.Errorf("labelled %q: places held in %v, want one create in %v", label, ledger.tenants, want)
		}
	}
}
