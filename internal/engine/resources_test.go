package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/usage"
	"github.com/tenantguard/tenantguard/tests/scale"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// cpuQuota is tenant t0 with 2 CPUs of requests tenant-wide, and a view of
// its namespaces t0-ns0..9 with 10 pods of 100m in t0-ns0.
func cpuQuota(t *testing.T) (*Engine, *clusterview.View) {
	t.Helper()
	reg, err := registry.Parse("r.yaml", []byte("apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: t0\n    owners: [{kind: User, name: u0}]\n    resourceQuota: {hard: {requests.cpu: \"2\", requests.memory: 8Gi}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(t.Context(), reg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := clusterview.New(registry.DefaultTenantLabel)
	scale.Fill(v, 1, 10, 0)
	for i := range 10 {
		v.Upsert(clusterview.Object{Kind: "Pod", Resource: "pods", Namespace: "t0-ns0", Name: fmt.Sprintf("busy-%d", i), Usage: usage.List{{Key: "requests.cpu", N: 100}}})
	}
	return e, v
}

const smallPod = `{"containers":[{"name":"web","image":"nginx","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}`

func TestABurstOfFiftyPodsAgainstRoomForTenCPUsAdmitsExactlyTen(t *testing.T) {
	e, view := cpuQuota(t)
	if admitted := burstOf(t, e, view, smallPod, "tenant-resource-quota"); admitted != 10 {
		t.Fatalf("%d of 50 pods admitted, want 10", admitted)
	}
	if got := view.Used("t0", "requests.cpu"); got != 2000 {
		t.Fatalf("t0 uses %dm of CPU with the admitted pods held, want 2000m", got)
	}
}

func TestResourceQuotaRefusalsSayWhatIsUsedAndWhatIsLeft(t *testing.T) {
	e, view := cpuQuota(t)
	tests := []struct {
		name string
		spec string
		want string
	}{
		{"a pod over the sum", strings.Replace(smallPod, `"100m"`, `"1500m"`, 1),
			`tenant "t0" would use requests.cpu 2500m of its 2; Pod "web" asks for 1500m and 1 is in use across 10 namespaces; it may ask for at most 1, or the tenant's quota must be raised`},
		{"a pod whose init container asks for more than its containers", `{"initContainers":[{"name":"migrate","image":"nginx","resources":{"requests":{"cpu":"1200m","memory":"1Gi"}}}],"containers":[{"name":"web","image":"nginx","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}`,
			`tenant "t0" would use requests.cpu 2200m of its 2; Pod "web" asks for 1200m and 1 is in use across 10 namespaces; it may ask for at most 1, or the tenant's quota must be raised`},
		{"a pod leaving its memory request unnamed", `{"containers":[{"name":"web","image":"nginx","resources":{"requests":{"cpu":"100m"}}}]}`,
			`Pod "web" must name requests.memory for its containers "web": tenant "t0" has a quota on requests.memory, which counts only what containers name; set resources.requests.memory in each`},
		{"a pod giving limits only, which the API server copies to its requests", `{"containers":[{"name":"web","image":"nginx","resources":{"limits":{"cpu":"1100m","memory":"64Mi"}}}]}`,
			`tenant "t0" would use requests.cpu 2100m of its 2; Pod "web" asks for 1100m and 1 is in use across 10 namespaces; it may ask for at most 1, or the tenant's quota must be raised`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := e.Validate(t.Context(), podCreate(t, 0, tt.spec), view)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed || len(d.Deny) != 1 || d.Deny[0].Msg != tt.want {
				t.Fatalf("decision %+v\nwant the refusal %q", d.Deny, tt.want)
			}
		})
	}
}

// update is an AdmissionReview of u0 updating (or, with sub, updating the
// subresource of) an object of t0-ns3 from old to new.
func update(t *testing.T, kind, resource, sub, old, new string) *admission.Request {
	t.Helper()
	body := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"","version":"v1","kind":%q},"resource":{"group":"","version":"v1","resource":%q},"subResource":%q,"namespace":"t0-ns3","name":"web","operation":"UPDATE","userInfo":{"username":"u0"},"object":%s,"oldObject":%s}}`, kind, resource, sub, new, old)
	req, err := admission.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestResizesAndExpansionsCountWhatTheyAdd(t *testing.T) {
	e, view := cpuQuota(t)
	view.Upsert(clusterview.Object{Kind: "Pod", Resource: "pods", Namespace: "t0-ns3", Name: "web", Usage: usage.List{{Key: "requests.cpu", N: 500}}})
	pod := func(cpu string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"t0-ns3"},"spec":{"containers":[{"name":"web","image":"nginx","resources":{"requests":{"cpu":%q,"memory":"64Mi"}}}]}}`, cpu)
	}
	claim := func(size string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"web","namespace":"t0-ns3"},"spec":{"resources":{"requests":{"storage":%q}}}}`, size)
	}
	tests := []struct {
		name string
		req  *admission.Request
		want string // "" admitted
	}{
		{"a resize within the room", update(t, "Pod", "pods", "resize", pod("500m"), pod("1")), ""},
		// from the resize before, which the view has not seen: the pod
		// counts at its 1, not the 500m the view has
		{"a resize past the room", update(t, "Pod", "pods", "resize", pod("1"), pod("2")),
			`tenant "t0" would use requests.cpu 3 of its 2; Pod "web" asks for 1 more and 2 is in use across 10 namespaces; nothing is left: free some or ask for a higher quota`},
		{"a resize down", update(t, "Pod", "pods", "resize", pod("2"), pod("100m")), ""},
		{"an expansion of a claim under an unlimited key", update(t, "PersistentVolumeClaim", "persistentvolumeclaims", "", claim("1Gi"), claim("1Ti")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := e.Admit(t.Context(), tt.req, view, quota.LocalLedger{View: view})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == "" && !d.Allowed:
				t.Fatalf("refused: %+v", d.Deny)
			case tt.want != "" && (d.Allowed || d.Deny[0].Msg != tt.want):
				t.Fatalf("decision %+v\nwant the refusal %q", d.Deny, tt.want)
			}
		})
	}
	if got := view.Used("t0", "requests.cpu"); got != 2000 {
		t.Fatalf("t0 uses %dm with the admitted resize held, want 1500m seen and 500m held", got)
	}
}

func TestAQuotaOnCPUByItsShortNameCountsRequests(t *testing.T) {
	reg, err := registry.Parse("r.yaml", []byte("apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: t0\n    owners: [{kind: User, name: u0}]\n    resourceQuota: {hard: {cpu: \"1\"}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(t.Context(), reg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, view := cpuQuota(t)
	d, err := e.Validate(t.Context(), podCreate(t, 0, smallPod), view)
	if err != nil {
		t.Fatal(err)
	}
	want := `tenant "t0" would use cpu 1100m of its 1; Pod "web" asks for 100m and 1 is in use across 10 namespaces; nothing is left: free some or ask for a higher quota`
	if d.Allowed || d.Deny[0].Msg != want {
		t.Fatalf("decision %+v\nwant %q", d.Deny, want)
	}
}

func TestAnExistingPodIsNotSummedAgainstItself(t *testing.T) {
	reg, err := registry.Parse("r.yaml", []byte("apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: t0\n    owners: [{kind: User, name: u0}]\n    resourceQuota: {hard: {requests.cpu: \"1\"}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(t.Context(), reg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, view := cpuQuota(t) // t0 at exactly 1 CPU: 10 pods of 100m
	held := podCreate(t, 0, smallPod)
	held.Namespace, held.Name = "t0-ns0", "busy-3"
	if d, err := e.ReviewExisting(t.Context(), held, view); err != nil || !d.Allowed {
		t.Fatalf("a pod the tenant holds at its sum: %+v, %v; want admitted", d, err)
	}
	fresh := podCreate(t, 0, smallPod)
	if d, err := e.ReviewExisting(t.Context(), fresh, view); err != nil || d.Allowed {
		t.Fatalf("a pod the view has not seen, at the sum: %+v, %v; want refused", d, err)
	}
}

func TestResourceFactsHoldOnlyTheKeysARequestWouldTakeOverTheirLimit(t *testing.T) {
	e, view := cpuQuota(t) // t0 uses 1000m of requests.cpu "2" and nothing of requests.memory 8Gi
	tests := []struct {
		name     string
		cpu, mem string
		want     string // the facts as JSON, "" for none
	}{
		{"a pod that fits every limit gets no facts", "100m", "64Mi", ""},
		{"a pod that takes the CPU sum to its limit exactly gets none", "1", "64Mi", ""},
		{"a pod over the CPU sum gets the CPU facts alone", "1500m", "64Mi",
			`{"adds": {"requests.cpu": 1500}, "namespaces": 10, "room": {"requests.cpu": 1000}, "used": {"requests.cpu": 1000}}`},
		{"a pod over both sums gets both", "1500m", "9Gi",
			`{"adds": {"requests.cpu": 1500, "requests.memory": 9663676416}, "namespaces": 10, "room": {"requests.cpu": 1000, "requests.memory": 8589934592}, "used": {"requests.cpu": 1000, "requests.memory": 0}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := podCreate(t, 0, fmt.Sprintf(`{"containers":[{"name":"web","image":"nginx","resources":{"requests":{"cpu":%q,"memory":%q}}}]}`, tt.cpu, tt.mem))
			r := e.resourced(req, view)
			if r == nil {
				t.Fatal("the pod adds nothing to t0's sums")
			}
			got := ""
			if f := resourceFacts(r, view); f != nil {
				got = f.String()
			}
			if got != tt.want {
				t.Fatalf("facts %s\nwant %s", got, tt.want)
			}
		})
	}
	// a tenant already over its limit (the quota lowered since): room
	// below zero, so even the smallest pod gets the facts
	for i := range 15 {
		view.Upsert(clusterview.Object{Kind: "Pod", Resource: "pods", Namespace: "t0-ns1", Name: fmt.Sprintf("late-%d", i), Usage: usage.List{{Key: "requests.cpu", N: 100}}})
	}
	r := e.resourced(podCreate(t, 0, smallPod), view)
	want := `{"adds": {"requests.cpu": 100}, "namespaces": 10, "room": {"requests.cpu": -500}, "used": {"requests.cpu": 2500}}`
	if f := resourceFacts(r, view); f == nil || f.String() != want {
		t.Fatalf("facts over the limit %v\nwant %s", f, want)
	}
}
