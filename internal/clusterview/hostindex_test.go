package clusterview

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func ingress(namespace, name string, hosts ...string) *Object {
	return &Object{Group: "networking.k8s.io", Kind: "Ingress", Resource: "ingresses", Namespace: namespace, Name: name, Hosts: NormalizeHosts(hosts)}
}

func route(namespace, name string, hosts ...string) *Object {
	return &Object{Group: gatewayGroup, Kind: "HTTPRoute", Resource: "httproutes", Namespace: namespace, Name: name, Hosts: NormalizeHosts(hosts)}
}

func holderOf(o *Object) Holder {
	return Holder{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
}

// names lists a lookup as HOST=KIND/NAMESPACE/NAME@TENANT, sorted.
func names(found map[string][]HostHolder) []string {
	var out []string
	for host, hs := range found {
		for _, h := range hs {
			out = append(out, fmt.Sprintf("%s=%s/%s/%s@%s", host, h.Kind, h.Namespace, h.Name, h.Tenant))
		}
	}
	slices.Sort(out)
	return out
}

func TestTheHostIndexFollowsTheObjectsThatServeHosts(t *testing.T) {
	web := ingress("oil-a", "web", "shop.oil.example.com", "www.oil.example.com")
	tests := []struct {
		name  string
		steps func(v *View)
		// asking is the object whose hosts are looked up.
		asking *Object
		want   []string
	}{
		{"an object's hosts are served, with its tenant", func(v *View) {
			v.UpdateHosts(nil, web)
		}, route("gas-a", "shop", "SHOP.oil.example.com"), []string{"shop.oil.example.com=Ingress/oil-a/web@oil"}},
		{"an object never collides with itself", func(v *View) {
			v.UpdateHosts(nil, web)
		}, ingress("oil-a", "web", "shop.oil.example.com"), nil},
		{"another kind of the same name is another object", func(v *View) {
			v.UpdateHosts(nil, web)
		}, route("oil-a", "web", "shop.oil.example.com"), []string{"shop.oil.example.com=Ingress/oil-a/web@oil"}},
		{"an update takes away the hosts the object no longer serves", func(v *View) {
			v.UpdateHosts(nil, web)
			v.UpdateHosts(web, ingress("oil-a", "web", "www.oil.example.com"))
		}, route("gas-a", "r", "shop.oil.example.com", "www.oil.example.com"), []string{"www.oil.example.com=Ingress/oil-a/web@oil"}},
		{"a deleted object serves nothing", func(v *View) {
			v.UpdateHosts(nil, web)
			v.UpdateHosts(web, nil)
		}, route("gas-a", "r", "shop.oil.example.com"), nil},
		{"a host served twice keeps its second holder when the first goes", func(v *View) {
			v.UpdateHosts(nil, web)
			v.UpdateHosts(nil, route("oil-b", "shop", "shop.oil.example.com"))
			v.UpdateHosts(web, nil)
		}, route("gas-a", "r", "shop.oil.example.com"), []string{"shop.oil.example.com=HTTPRoute/oil-b/shop@oil"}},
		{"every holder of a host is listed, in order", func(v *View) {
			v.UpdateHosts(nil, route("oil-b", "shop", "shop.oil.example.com"))
			v.UpdateHosts(nil, web)
			v.UpdateHosts(nil, web)
		}, route("gas-a", "r", "shop.oil.example.com"), []string{"shop.oil.example.com=HTTPRoute/oil-b/shop@oil", "shop.oil.example.com=Ingress/oil-a/web@oil"}},
		{"a wildcard is held as itself and by the names under it", func(v *View) {
			v.UpdateHosts(nil, ingress("oil-a", "any", "*.oil.example.com"))
		}, route("gas-a", "r", "shop.oil.example.com", "*.oil.example.com"), []string{"*.oil.example.com=Ingress/oil-a/any@oil", "shop.oil.example.com=Ingress/oil-a/any@oil"}},
		{"an Ingress wildcard covers one label, a route's any number", func(v *View) {
			v.UpdateHosts(nil, ingress("oil-a", "any", "*.oil.example.com"))
			v.UpdateHosts(nil, route("oil-b", "mesh", "*.mesh.example.com"))
		}, route("gas-a", "r", "a.b.oil.example.com", "a.b.mesh.example.com"), []string{"a.b.mesh.example.com=HTTPRoute/oil-b/mesh@oil"}},
		{"a wildcard asked about is held by the names under it, as its kind reads it", func(v *View) {
			v.UpdateHosts(nil, ingress("oil-a", "web", "shop.oil.example.com"))
			v.UpdateHosts(nil, ingress("oil-b", "deep", "a.shop.oil.example.com"))
		}, ingress("gas-a", "any", "*.oil.example.com"), []string{"*.oil.example.com=Ingress/oil-a/web@oil"}},
		{"a wildcard under a route's wildcard is held by it, not under an Ingress's", func(v *View) {
			v.UpdateHosts(nil, ingress("oil-a", "any", "*.oil.example.com"))
			v.UpdateHosts(nil, route("oil-b", "mesh", "*.mesh.example.com"))
		}, route("gas-a", "r", "*.a.oil.example.com", "*.a.mesh.example.com"), []string{"*.a.mesh.example.com=HTTPRoute/oil-b/mesh@oil"}},
		{"a route's wildcard asked about is held by the narrower wildcards under it", func(v *View) {
			v.UpdateHosts(nil, ingress("oil-a", "deep", "*.shop.oil.example.com"))
		}, route("gas-a", "r", "*.oil.example.com"), []string{"*.oil.example.com=Ingress/oil-a/deep@oil"}},
		{"an Ingress's wildcard asked about is not", func(v *View) {
			v.UpdateHosts(nil, ingress("oil-a", "deep", "*.shop.oil.example.com"))
		}, ingress("gas-a", "any", "*.oil.example.com"), nil},
		{"objects read from files are indexed by Upsert and Delete", func(v *View) {
			v.Upsert(*web)
			v.Upsert(*route("oil-b", "gone", "shop.oil.example.com"))
			v.Delete(*route("oil-b", "gone", "shop.oil.example.com"))
		}, route("gas-a", "r", "shop.oil.example.com"), []string{"shop.oil.example.com=Ingress/oil-a/web@oil"}},
		{"a namespace of no tenant has none", func(v *View) {
			v.UpdateHosts(nil, ingress("tools", "web", "shop.oil.example.com"))
		}, route("gas-a", "r", "shop.oil.example.com"), []string{"shop.oil.example.com=Ingress/tools/web@"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := New(label)
			v.Upsert(ns("oil-a", "oil"))
			v.Upsert(ns("oil-b", "oil"))
			v.Upsert(ns("gas-a", "gas"))
			tt.steps(v)
			got := names(v.HostHolders(holderOf(tt.asking), tt.asking.Hosts))
			if !slices.Equal(got, tt.want) {
				t.Errorf("holders %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHostHoldsStandForTheRequestsBeingDecided(t *testing.T) {
	const ttl = time.Minute
	web, shop := ingress("oil-a", "web", "shop.oil.example.com"), route("gas-a", "shop", "shop.oil.example.com")
	tests := []struct {
		name  string
		steps func(v *View) []string
		// after is what shop sees once the steps are done.
		want, after []string
	}{
		{"a request holds its hosts while it is decided", func(v *View) []string {
			found, _, _ := v.ReserveHosts(holderOf(web), web.Hosts, HoldOptions{TTL: ttl})
			return names(found)
		}, nil, []string{"shop.oil.example.com=Ingress/oil-a/web@oil"}},
		{"the second request for a host sees the first", func(v *View) []string {
			v.ReserveHosts(holderOf(web), web.Hosts, HoldOptions{TTL: ttl})
			found, _, _ := v.ReserveHosts(holderOf(shop), shop.Hosts, HoldOptions{TTL: ttl})
			return names(found)
		}, []string{"shop.oil.example.com=Ingress/oil-a/web@oil"}, []string{"shop.oil.example.com=Ingress/oil-a/web@oil"}},
		{"a refused request gives its hosts back", func(v *View) []string {
			_, hold, _ := v.ReserveHosts(holderOf(web), web.Hosts, HoldOptions{TTL: ttl})
			hold.Release()
			return nil
		}, nil, nil},
		{"an admitted request holds its hosts until its object is seen", func(v *View) []string {
			_, hold, _ := v.ReserveHosts(holderOf(web), web.Hosts, HoldOptions{TTL: ttl})
			hold.Keep()
			return nil
		}, nil, []string{"shop.oil.example.com=Ingress/oil-a/web@oil"}},
		{"the object seen takes over the hold and is listed once", func(v *View) []string {
			_, hold, _ := v.ReserveHosts(holderOf(web), web.Hosts, HoldOptions{TTL: ttl})
			hold.Keep()
			v.UpdateHosts(nil, web)
			if v.ReservedHosts() != 0 {
				return []string{"still held"}
			}
			return nil
		}, nil, []string{"shop.oil.example.com=Ingress/oil-a/web@oil"}},
		{"a refused update leaves no host in the hold of the admitted create before it", func(v *View) []string {
			_, create, _ := v.ReserveHosts(holderOf(web), []string{"web.oil.example.com"}, HoldOptions{TTL: ttl})
			create.Keep()
			_, update, _ := v.ReserveHosts(holderOf(web), web.Hosts, HoldOptions{TTL: ttl})
			update.Release()
			return nil
		}, nil, nil},
		{"a retried request keeps the hosts its admitting decision held", func(v *View) []string {
			_, first, _ := v.ReserveHosts(holderOf(web), web.Hosts, HoldOptions{TTL: ttl})
			_, retry, _ := v.ReserveHosts(holderOf(web), web.Hosts, HoldOptions{TTL: ttl})
			first.Keep()
			retry.Release()
			return nil
		}, nil, []string{"shop.oil.example.com=Ingress/oil-a/web@oil"}},
		{"an update holds the hosts but does not see its own object", func(v *View) []string {
			v.UpdateHosts(nil, web)
			found, _, _ := v.ReserveHosts(holderOf(web), []string{"shop.oil.example.com", "new.oil.example.com"}, HoldOptions{TTL: ttl})
			return names(found)
		}, nil, []string{"shop.oil.example.com=Ingress/oil-a/web@oil"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := New(label)
			v.Upsert(ns("oil-a", "oil"))
			v.Upsert(ns("gas-a", "gas"))
			if got := tt.steps(v); !slices.Equal(got, tt.want) {
				t.Errorf("the steps saw %v, want %v", got, tt.want)
			}
			if got := names(v.HostHolders(holderOf(shop), shop.Hosts)); !slices.Equal(got, tt.after) {
				t.Errorf("afterwards %v, want %v", got, tt.after)
			}
		})
	}
}

func TestAnAdmittedHoldExpires(t *testing.T) {
	v := New(label)
	now := time.Now()
	v.hosts.now = func() time.Time { return now }
	web := ingress("oil-a", "web", "shop.oil.example.com")
	_, hold, _ := v.ReserveHosts(holderOf(web), web.Hosts, HoldOptions{TTL: time.Minute})
	hold.Keep()
	now = now.Add(2 * time.Minute)
	other := route("gas-a", "shop", "shop.oil.example.com")
	// Read without a reservation first (the audit, a request that holds
	// nothing): the expired hold is gone there too.
	if found := v.HostHolders(holderOf(other), other.Hosts); len(found) != 0 {
		t.Errorf("an expired hold still holds, read without a reservation: %v", names(found))
	}
	if n := v.ReservedHosts(); n != 0 {
		t.Errorf("%d holds counted past their TTL", n)
	}
	if found, _, _ := v.ReserveHosts(holderOf(other), other.Hosts, HoldOptions{TTL: time.Minute}); len(found) != 0 {
		t.Errorf("an expired hold still holds: %v", names(found))
	}
}

func TestOfParallelRequestsForOneHostEachSeesTheOnesBefore(t *testing.T) {
	v := New(label)
	const n = 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	free := 0
	for i := range n {
		wg.Go(func() {
			o := ingress(fmt.Sprintf("ns%d", i), "web", "shop.example.com")
			found, hold, _ := v.ReserveHosts(holderOf(o), o.Hosts, HoldOptions{TTL: time.Minute})
			if len(found) == 0 {
				mu.Lock()
				free++
				mu.Unlock()
				hold.Keep()
				return
			}
			hold.Release()
		})
	}
	wg.Wait()
	if free != 1 {
		t.Fatalf("%d of %d parallel requests found the host free, want 1", free, n)
	}
	if v.ReservedHosts() != 1 {
		t.Fatalf("%d holds left, want the admitted one", v.ReservedHosts())
	}
}

func TestHostsAreReadFromManifests(t *testing.T) {
	objects, err := Parse([]byte(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: a}
spec:
  rules: [{host: Shop.Example.com}, {host: ""}, {}]
  tls: [{hosts: [tls.example.com, shop.example.com]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: api, namespace: a}
spec: {hostnames: [api.example.com]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: a}
spec: {listeners: [{hostname: gw.example.com}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := [][]string{objects[0].Hosts, objects[1].Hosts, objects[2].Hosts}
	// an Ingress's TLS hosts name its certificate and serve nothing
	want := [][]string{{"shop.example.com"}, {"api.example.com"}, nil}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("object %d serves %v, want %v", i, got[i], want[i])
		}
	}
}
