package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/scale"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// edgeRequest is an AdmissionReview of tenant t<tenant>'s owner sending an
// Ingress or HTTPRoute named name, serving hosts, in namespace ns; an UPDATE
// comes from the object serving the first host only.
func edgeRequest(tb testing.TB, operation, kind, ns, name string, tenant int, hosts ...string) *admission.Request {
	tb.Helper()
	group, resource, reqKind := "networking.k8s.io", "ingresses", kind
	switch kind {
	case "HTTPRoute":
		group, resource = "gateway.networking.k8s.io", "httproutes"
	case "ListenerSet", sharedListenerSet:
		group, resource, reqKind = "gateway.networking.k8s.io", "listenersets", "ListenerSet"
	}
	object := edgeObject(group, kind, ns, name, hosts)
	old := ""
	if operation == "UPDATE" {
		old = `,"oldObject":` + edgeObject(group, kind, ns, name, hosts[:1])
	}
	req, err := admission.Decode(fmt.Appendf(nil, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-%[1]s-%[2]s","kind":{"group":%[3]q,"version":"v1","kind":%[4]q},"resource":{"group":%[3]q,"version":"v1","resource":%[5]q},"namespace":%[1]q,"name":%[2]q,"operation":%[6]q,"userInfo":{"username":"u%[7]d"},"object":%[8]s%[9]s}}`,
		ns, name, group, reqKind, resource, operation, tenant, object, old))
	if err != nil {
		tb.Fatal(err)
	}
	return req
}

// sharedListenerSet, as edgeRequest's kind, is a ListenerSet attached to
// the Gateway "shared" of namespace infra; "ListenerSet" is one attached to
// a Gateway of its own namespace.
const sharedListenerSet = "ListenerSet@infra"

// edgeObject is an Ingress, HTTPRoute or ListenerSet serving hosts, as
// JSON.
func edgeObject(group, kind, ns, name string, hosts []string) string {
	quoted := make([]string, len(hosts))
	for i, h := range hosts {
		quoted[i] = fmt.Sprintf("%q", h)
	}
	spec := `{"hostnames":[` + strings.Join(quoted, ",") + `]}`
	switch kind {
	case "Ingress":
		rules := make([]string, len(hosts))
		for i, h := range quoted {
			rules[i] = `{"host":` + h + `}`
		}
		spec = `{"rules":[` + strings.Join(rules, ",") + `]}`
	case "ListenerSet", sharedListenerSet:
		listeners := make([]string, len(hosts))
		for i, h := range quoted {
			listeners[i] = fmt.Sprintf(`{"name":"l%d","protocol":"HTTP","port":80,"hostname":%s}`, i, h)
		}
		parent := `{"name":"own"}`
		if kind == sharedListenerSet {
			kind, parent = "ListenerSet", `{"name":"shared","namespace":"infra"}`
		}
		spec = `{"parentRef":` + parent + `,"listeners":[` + strings.Join(listeners, ",") + `]}`
	}
	return fmt.Sprintf(`{"apiVersion":"%s/v1","kind":%q,"metadata":{"name":%q,"namespace":%q},"spec":%s}`, group, kind, name, ns, spec)
}

func TestHostsOtherObjectsServeAreRefusedInTheTenantsScope(t *testing.T) {
	e, err := New(t.Context(), scaleRegistry(t, 2), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// t0 and t1 serve web.ns<j>.t<i>.example.com by Ingress web and
	// api.ns<j>.t<i>.example.com by HTTPRoute api in each t<i>-ns<j>;
	// every tenant's scope is cluster.
	view := scaleView(2)
	tests := []struct {
		name string
		req  *admission.Request
		// want is the denial, "" when admitted.
		want string
	}{
		{"another tenant's host is refused, naming its holder", edgeRequest(t, "CREATE", "Ingress", "t1-ns0", "shop", 1, "web.ns3.t0.example.com"),
			`host "web.ns3.t0.example.com" of Ingress "shop" is already served by Ingress "web" in namespace "t0-ns3"; choose another host`},
		{"a route colliding with an Ingress is refused", edgeRequest(t, "CREATE", "HTTPRoute", "t0-ns1", "shop", 0, "WEB.ns3.t0.example.com"),
			`host "web.ns3.t0.example.com" of HTTPRoute "shop" is already served by Ingress "web" in namespace "t0-ns3"; choose another host`},
		{"a host of the same namespace passes in scope cluster", edgeRequest(t, "CREATE", "Ingress", "t0-ns3", "shop", 0, "api.ns3.t0.example.com"), ""},
		{"a new host passes", edgeRequest(t, "CREATE", "Ingress", "t0-ns3", "shop", 0, "shop.t0.example.com"), ""},
		{"an update keeping its hosts passes", edgeRequest(t, "UPDATE", "Ingress", "t0-ns3", "web", 0, "web.ns3.t0.example.com"), ""},
		{"a ListenerSet on a shared Gateway binding another namespace's host is refused", edgeRequest(t, "CREATE", sharedListenerSet, "t0-ns1", "edge", 0, "web.ns3.t0.example.com"),
			`host "web.ns3.t0.example.com" of ListenerSet "edge" is already served by Ingress "web" in namespace "t0-ns3"; choose another host`},
		{"a ListenerSet on its own namespace's Gateway serves no host", edgeRequest(t, "CREATE", "ListenerSet", "t0-ns1", "edge", 0, "web.ns3.t0.example.com"), ""},
		{"an update adding another's host is refused", edgeRequest(t, "UPDATE", "Ingress", "t0-ns3", "web", 0, "web.ns3.t0.example.com", "api.ns0.t1.example.com"),
			`host "api.ns0.t1.example.com" of Ingress "web" is already served by HTTPRoute "api" in namespace "t1-ns0"; choose another host`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := e.Admit(t.Context(), tt.req, view, quota.LocalLedger{View: view})
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, v := range d.Deny {
				if v.ID == "hostname-collision" {
					got = v.Msg
				}
			}
			if got != tt.want || d.Allowed != (tt.want == "") {
				t.Errorf("allowed %v, denied %v; want %q", d.Allowed, d.Deny, tt.want)
			}
		})
	}
}

func TestOfTwentyParallelCreatesOfOneHostOneIsAdmitted(t *testing.T) {
	e, err := New(t.Context(), scaleRegistry(t, 2), Options{})
	if err != nil {
		t.Fatal(err)
	}
	view := scaleView(2)
	var wg sync.WaitGroup
	decisions := make([]*admission.Decision, 20)
	errs := make([]error, 20)
	for i := range decisions {
		wg.Go(func() {
			req := edgeRequest(t, "CREATE", "Ingress", fmt.Sprintf("t%d-ns%d", i%2, i/2), "shop", i%2, "shop.example.com")
			decisions[i], errs[i] = e.Admit(t.Context(), req, view, quota.LocalLedger{View: view})
		})
	}
	wg.Wait()
	admitted, winner := 0, ""
	for i, d := range decisions {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if d.Allowed {
			admitted++
			winner = fmt.Sprintf("t%d-ns%d", i%2, i/2)
		} else if len(d.Deny) != 1 || d.Deny[0].ID != "hostname-collision" {
			t.Fatalf("create %d refused with %v, want hostname-collision", i, d.Deny)
		}
	}
	if admitted != 1 || view.ReservedHosts() != 1 {
		t.Fatalf("%d of 20 creates admitted, %d holding their host; want 1 and 1", admitted, view.ReservedHosts())
	}
	view.UpdateHosts(nil, &clusterview.Object{Group: "networking.k8s.io", Kind: "Ingress", Namespace: winner, Name: "shop", Hosts: []string{"shop.example.com"}})
	if view.ReservedHosts() != 0 {
		t.Fatalf("%d holds after the object was seen", view.ReservedHosts())
	}
}

// TestAnUpdateKeepsTheHostsItServedBefore: the hosts an update's object
// served before it (its old object's) are kept, which the strict ledger of
// hosts claims no more; a create keeps none.
func TestAnUpdateKeepsTheHostsItServedBefore(t *testing.T) {
	e, err := New(t.Context(), scaleRegistry(t, 2), Options{})
	if err != nil {
		t.Fatal(err)
	}
	view := scaleView(2)
	for _, tt := range []struct {
		name string
		req  *admission.Request
		kept []string
	}{
		{"a create", edgeRequest(t, "CREATE", "Ingress", "t0-ns3", "shop", 0, "a.t0.example.com", "b.t0.example.com"), nil},
		{"an update adding a host", edgeRequest(t, "UPDATE", "Ingress", "t0-ns3", "web", 0, "A.t0.example.com", "b.t0.example.com"), []string{"a.t0.example.com"}},
		{"a route's update", edgeRequest(t, "UPDATE", "HTTPRoute", "t0-ns3", "api", 0, "a.t0.example.com"), []string{"a.t0.example.com"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := e.served(tt.req, view)
			if s == nil {
				t.Fatal("not serving")
			}
			if kept := keptHosts(tt.req, s.hosts); !slices.Equal(kept, tt.kept) {
				t.Fatalf("kept %v, want %v", kept, tt.kept)
			}
		})
	}
}

func TestTheCollisionRuleAndTheExportsJudgeTheKindsTheHostIndexHolds(t *testing.T) {
	lib := catalog.MustEmbedded()
	rule, ok := lib.Rule("hostname-collision")
	if !ok {
		t.Fatal("no hostname-collision rule")
	}
	indexed := map[string]string{}
	for _, k := range clusterview.HostKinds() {
		indexed[k.Group+"/"+k.Kind] = k.Resource
	}
	judged := map[string]string{}
	for _, key := range rule.KindKeys() {
		judged[key] = indexed[key]
	}
	if !maps.Equal(judged, indexed) {
		t.Errorf("hostname-collision judges %v; the host index holds %v", slices.Sorted(maps.Keys(judged)), slices.Sorted(maps.Keys(indexed)))
	}
	// the exports' adapters read hosts.kinds
	opts := []func(*rego.Rego){rego.Query("data.tenantguard.lib.hosts.kinds")}
	for path, src := range lib.Modules() {
		opts = append(opts, rego.Module(path, src))
	}
	rs, err := rego.New(opts...).Eval(t.Context())
	if err != nil || len(rs) != 1 {
		t.Fatalf("hosts.kinds: %v, %v", rs, err)
	}
	declared := map[string]string{}
	for key, k := range rs[0].Expressions[0].Value.(map[string]any) {
		declared[key] = k.(map[string]any)["resource"].(string)
	}
	if !maps.Equal(declared, indexed) {
		t.Errorf("hosts.kinds declares %v; the host index holds %v", declared, indexed)
	}
}

// TestARequestTakingItsTenantPastTheHostsItMayHoldIsRefused: a tenant's
// requests hold at most quota.MostHostsHeld new hosts at a time; past that
// a request is refused with [hostname-collision], saying how many and for
// how long, until the objects holding them are seen; another tenant, and
// an administrator, are not held back.
func TestARequestTakingItsTenantPastTheHostsItMayHoldIsRefused(t *testing.T) {
	withAdmin := strings.Replace(string(scale.Registry(2)), "settings: {", "settings: {administrators: [{kind: User, name: platform-admin}], ", 1)
	reg, err := registry.Parse("scale.yaml", []byte(withAdmin))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(t.Context(), reg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	view := scaleView(2)
	ledger := quota.LocalLedger{View: view}
	many := make([]string, quota.MostHostsHeld)
	for i := range many {
		many[i] = fmt.Sprintf("h%d.t0.example.com", i)
	}
	admit := func(req *admission.Request) *admission.Decision {
		t.Helper()
		d, err := e.Admit(t.Context(), req, view, ledger)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := admit(edgeRequest(t, "CREATE", "Ingress", "t0-ns3", "big", 0, many...)); !d.Allowed {
		t.Fatalf("%d hosts refused: %v", len(many), d.Deny)
	}
	more := edgeRequest(t, "CREATE", "Ingress", "t0-ns3", "more", 0, "more.t0.example.com")
	want := fmt.Sprintf(`[hostname-collision] Ingress "more" would hold 1 new hosts while tenant "t0" holds %d: a tenant holds at most %[1]d new hosts at a time, each for up to 30s after its object is admitted; try again shortly, or name fewer new hosts in one object`, quota.MostHostsHeld)
	if d := admit(more); d.Allowed || !slices.Equal(admission.Messages(d.Deny), []string{want}) {
		t.Fatalf("refused with %v, want %q", admission.Messages(d.Deny), want)
	}
	if d := admit(edgeRequest(t, "CREATE", "Ingress", "t1-ns3", "more", 1, "more.t1.example.com")); !d.Allowed {
		t.Fatalf("another tenant refused: %v", d.Deny)
	}
	byAdmin, err := admission.Decode(fmt.Appendf(nil, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-admin","kind":{"group":"networking.k8s.io","version":"v1","kind":"Ingress"},"resource":{"group":"networking.k8s.io","version":"v1","resource":"ingresses"},"namespace":"t0-ns3","name":"admin","operation":"CREATE","userInfo":{"username":"platform-admin"},"object":%s}}`,
		edgeObject("networking.k8s.io", "Ingress", "t0-ns3", "admin", []string{"admin.t0.example.com"})))
	if err != nil {
		t.Fatal(err)
	}
	if d := admit(byAdmin); !d.Allowed {
		t.Fatalf("an administrator refused: %v", d.Deny)
	}
	view.UpdateHosts(nil, &clusterview.Object{Group: "networking.k8s.io", Kind: "Ingress", Namespace: "t0-ns3", Name: "big", Hosts: many})
	if d := admit(more); !d.Allowed {
		t.Fatalf("refused once big is seen: %v", d.Deny)
	}
}

func TestTheRefusalOfTooManyHostsSaysWhichBoundAndByHowMuch(t *testing.T) {
	req := edgeRequest(t, "CREATE", "Ingress", "t0-ns3", "big", 0, "a.t0.example.com")
	tests := []struct {
		name string
		full quota.TooManyHostsError
		want string
	}{
		{"hosts held", quota.TooManyHostsError{Tenant: "t0", Held: 999, Asked: 2, Most: 1000},
			`[hostname-collision] Ingress "big" would hold 2 new hosts while tenant "t0" holds 999: a tenant holds at most 1000 new hosts at a time, each for up to 30s after its object is admitted; try again shortly, or name fewer new hosts in one object`},
		{"bytes of the ledger of hosts", quota.TooManyHostsError{Tenant: "t0", Held: 300, Asked: 150, Bytes: 180000, AskedBytes: 90000, MostBytes: 261888},
			`[hostname-collision] Ingress "big" would add 150 new hosts taking 88 KiB to the ledger of hosts, where tenant "t0"'s take 176 KiB: a tenant's take at most 256 KiB of it at a time, each for up to 30s after its object is admitted; try again shortly, or name fewer new hosts, or shorter ones, in one object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tooManyHosts(req, &tt.full, 30*time.Second)
			if got := admission.Messages(d.Deny); d.Allowed || !slices.Equal(got, []string{tt.want}) {
				t.Errorf("got %v, want %q", got, tt.want)
			}
		})
	}
}

// TestTheRefusalOfTooManyHostsNamesARuleOfTheLibrary: the rule id the Go
// refusal gives is the collision rule's, as the embedded library declares it.
func TestTheRefusalOfTooManyHostsNamesARuleOfTheLibrary(t *testing.T) {
	cat, err := catalog.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cat.Rule(collisionRule); !ok {
		t.Errorf("no rule %q in the embedded library: %v", collisionRule, cat.IDs())
	}
}
