package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/tests/live"
)

// collisionBurst is how many Ingresses of one host a burst creates at once,
// each in a namespace of its own.
const collisionBurst = 20

var httpRoutes = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}

// httpRoute is an HTTPRoute named name serving hosts.
func httpRoute(name string, hosts ...string) *unstructured.Unstructured {
	list := make([]any, len(hosts))
	for i, h := range hosts {
		list[i] = h
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"hostnames": list},
	}}
}

// listenerSetKinds are the kinds that add listeners to a Gateway: the
// ListenerSet, and the experimental XListenerSet of the Gateway API v1.3 to
// v1.4 (its CRD from v1.4.1 is installed beside the standard ones).
var listenerSetKinds = []struct {
	gvr  schema.GroupVersionResource
	kind string
}{
	{schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "listenersets"}, "ListenerSet"},
	{schema.GroupVersionResource{Group: "gateway.networking.x-k8s.io", Version: "v1alpha1", Resource: "xlistenersets"}, "XListenerSet"},
}

// listenerSet is a ListenerSet (of kind, served as gvr) named name with one
// HTTP listener of host, attached to the Gateway "shared" of namespace
// parent, or to the Gateway "own" of its own namespace when parent is "".
func listenerSet(gvr schema.GroupVersionResource, kind, name, parent, host string) *unstructured.Unstructured {
	ref := map[string]any{"name": "own"}
	if parent != "" {
		ref = map[string]any{"name": "shared", "namespace": parent}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind, "metadata": map[string]any{"name": name},
		"spec": map[string]any{"parentRef": ref, "listeners": []any{map[string]any{"name": "http", "protocol": "HTTP", "port": int64(80), "hostname": host}}},
	}}
}

// TestHostnameCollisions adds tenants zinc (hostnameCollision cluster), iron
// (tenant) and brass (cluster, 20 namespaces) to the shared cluster's
// registry, and has their owners publish hosts through the real API server:
// Ingresses, Gateway API HTTPRoutes and ListenerSets (their CRDs are installed), created
// and updated, and a burst of parallel creates of one host.
func TestHostnameCollisions(t *testing.T) {
	doc := registryDoc(t, cluster)
	t.Cleanup(func() { setRegistryDoc(t, cluster, doc) })
	edge := doc
	for _, tenant := range []struct{ name, owner, scope string }{
		{"zinc", "zed", "cluster"}, {"iron", "ira", "tenant"}, {"brass", "bo", "cluster"},
	} {
		edge = withTenant(t, edge, map[string]any{
			"name":    tenant.name,
			"owners":  []any{map[string]any{"kind": "User", "name": tenant.owner}},
			"ingress": map[string]any{"hostnameCollision": tenant.scope},
		})
	}
	setRegistryDoc(t, cluster, edge)
	ctx := t.Context()
	admin := fastClient(t, cluster.Admin)
	names := []string{"zinc-a", "zinc-b", "iron-a", "iron-b"}
	for i := range collisionBurst {
		names = append(names, fmt.Sprintf("brass-%02d", i))
	}
	for _, ns := range names {
		tenant, _, _ := strings.Cut(ns, "-")
		_, err := admin.CoreV1().Namespaces().Create(ctx, namespace(ns, map[string]string{tenantLabel: tenant}), metav1.CreateOptions{})
		wantAllowed(t, err)
	}
	zed, ira := cluster.As("zed"), cluster.As("ira")
	zedRoutes := cluster.DynamicAs("zed").Resource(httpRoutes)

	// iron serves api.iron.example.com from iron-a; zinc's registry is in
	// force, and the view sees iron's Ingress, once zinc is refused it.
	_, err := ira.NetworkingV1().Ingresses("iron-a").Create(ctx, ingress("api", "", "api.iron.example.com"), metav1.CreateOptions{})
	wantAllowed(t, err)
	eventually(t, "zinc's scope in force and iron's Ingress in the view", func(ctx context.Context) error {
		_, err := zed.NetworkingV1().Ingresses("zinc-a").Create(ctx, ingress("probe", "", "api.iron.example.com"), dryRun)
		return denialOf(err, "hostname-collision")
	})

	t.Run("another tenant's host is refused, naming the object that serves it", func(t *testing.T) {
		_, err := zed.NetworkingV1().Ingresses("zinc-a").Create(t.Context(), ingress("steal", "", "api.iron.example.com"), metav1.CreateOptions{})
		wantDenied(t, err, "hostname-collision")
		want := `[hostname-collision] host "api.iron.example.com" of Ingress "steal" is already served by Ingress "api" in namespace "iron-a"; choose another host`
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v; want %s", err, want)
		}
	})
	t.Run("a route colliding with an Ingress is refused", func(t *testing.T) {
		_, err := zed.NetworkingV1().Ingresses("zinc-a").Create(t.Context(), ingress("shop", "", "shop.zinc.example.com"), metav1.CreateOptions{})
		wantAllowed(t, err)
		eventually(t, "zinc's Ingress in the view", func(ctx context.Context) error {
			_, err := zedRoutes.Namespace("zinc-b").Create(ctx, httpRoute("shop", "shop.zinc.example.com"), dryRun)
			return denialOf(err, "hostname-collision")
		})
		_, err = zedRoutes.Namespace("zinc-b").Create(t.Context(), httpRoute("shop", "shop.zinc.example.com"), metav1.CreateOptions{})
		want := `host "shop.zinc.example.com" of HTTPRoute "shop" is already served by Ingress "shop" in namespace "zinc-a"`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v; want a denial saying %s", err, want)
		}
		// in scope cluster, the namespace that serves a host may route it too
		_, err = zedRoutes.Namespace("zinc-a").Create(t.Context(), httpRoute("shop", "shop.zinc.example.com"), metav1.CreateOptions{})
		wantAllowed(t, err)
	})
	t.Run("an update adding another tenant's host is refused, one keeping its hosts passes", func(t *testing.T) {
		shop, err := zed.NetworkingV1().Ingresses("zinc-a").Get(t.Context(), "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		taking := shop.DeepCopy()
		taking.Spec.Rules = append(taking.Spec.Rules, networkingv1.IngressRule{Host: "api.iron.example.com"})
		_, err = zed.NetworkingV1().Ingresses("zinc-a").Update(t.Context(), taking, metav1.UpdateOptions{})
		wantDenied(t, err, "hostname-collision")
		// TLS hosts name a certificate and serve nothing: a shared
		// wildcard certificate over the other tenant's host is no collision
		certifying := shop.DeepCopy()
		certifying.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"*.iron.example.com"}, SecretName: "wildcard"}}
		_, err = zed.NetworkingV1().Ingresses("zinc-a").Update(t.Context(), certifying, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		wantAllowed(t, err)
		shop.Labels = map[string]string{"app": "shop"}
		_, err = zed.NetworkingV1().Ingresses("zinc-a").Update(t.Context(), shop, metav1.UpdateOptions{})
		wantAllowed(t, err)
	})
	for _, k := range listenerSetKinds {
		t.Run(k.kind+"s on a shared Gateway bind hosts as their routes serve them, those on their own Gateway do not", func(t *testing.T) {
			zedListenerSets := cluster.DynamicAs("zed").Resource(k.gvr)
			prefix := strings.ToLower(k.kind) + "-"
			_, err := zedListenerSets.Namespace("zinc-b").Create(t.Context(), listenerSet(k.gvr, k.kind, prefix+"steal", "infra", "shop.zinc.example.com"), metav1.CreateOptions{})
			want := fmt.Sprintf(`host "shop.zinc.example.com" of %s %q is already served by HTTPRoute "shop" in namespace "zinc-a"`, k.kind, prefix+"steal")
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v; want a denial saying %s", err, want)
			}
			_, err = zedListenerSets.Namespace("zinc-b").Create(t.Context(), listenerSet(k.gvr, k.kind, prefix+"own", "", "shop.zinc.example.com"), metav1.CreateOptions{})
			wantAllowed(t, err)
			host := prefix + "edge.zinc.example.com"
			_, err = zedListenerSets.Namespace("zinc-b").Create(t.Context(), listenerSet(k.gvr, k.kind, prefix+"edge", "infra", host), metav1.CreateOptions{})
			wantAllowed(t, err)
			eventually(t, "zinc's "+k.kind+" in the view", func(ctx context.Context) error {
				_, err := zedRoutes.Namespace("zinc-a").Create(ctx, httpRoute(prefix+"edge", host), dryRun)
				return denialOf(err, "hostname-collision")
			})
			_, err = zedRoutes.Namespace("zinc-a").Create(t.Context(), httpRoute(prefix+"edge", host), metav1.CreateOptions{})
			want = fmt.Sprintf(`host %q of HTTPRoute %q is already served by %s %q in namespace "zinc-b"`, host, prefix+"edge", k.kind, prefix+"edge")
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v; want a denial saying %s", err, want)
			}
		})
	}
	t.Run("scope tenant lets a tenant reuse its host in its other namespaces, not take another's", func(t *testing.T) {
		_, err := ira.NetworkingV1().Ingresses("iron-b").Create(t.Context(), ingress("api", "", "api.iron.example.com"), metav1.CreateOptions{})
		wantAllowed(t, err)
		_, err = ira.NetworkingV1().Ingresses("iron-b").Create(t.Context(), ingress("shop", "", "shop.zinc.example.com"), dryRun)
		wantDenied(t, err, "hostname-collision")
	})
	t.Run("of parallel creates of one host from different namespaces exactly one is admitted", func(t *testing.T) {
		bo := impersonating(t, "bo")
		eventually(t, "brass's namespaces in the view", func(ctx context.Context) error {
			for i := range collisionBurst {
				if _, err := bo.NetworkingV1().Ingresses(fmt.Sprintf("brass-%02d", i)).Create(ctx, ingress("probe", "", "api.iron.example.com"), dryRun); denialOf(err, "hostname-collision") != nil {
					return fmt.Errorf("brass-%02d: %w", i, denialOf(err, "hostname-collision"))
				}
			}
			return nil
		})
		admitted, refused, elapsed := createHostBurst(t, bo, oneHost("burst.brass.example.com"), "burst")
		t.Logf("%d of %d parallel creates of one host admitted, %d refused by hostname-collision, burst took %v", admitted, collisionBurst, refused, elapsed.Round(time.Millisecond))
		if admitted != 1 || refused != collisionBurst-1 {
			t.Fatalf("%d admitted and %d refused by hostname-collision, want 1 and %d", admitted, refused, collisionBurst-1)
		}
		stored := 0
		list, err := admin.NetworkingV1().Ingresses("").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ing := range list.Items {
			if ing.Name == "burst" {
				stored++
			}
		}
		if stored != 1 {
			t.Fatalf("%d Ingresses of the burst stored, want 1", stored)
		}
	})
	t.Run("a tenant's creates that the API server refuses after tenantguard hold at most quota.MostHostsHeld hosts", func(t *testing.T) {
		hosts := func(batch int) []string {
			out := make([]string, quota.MostHostsHeld*3/5)
			for i := range out {
				out[i] = fmt.Sprintf("h%d-%d.zinc.example.com", batch, i)
			}
			return out
		}
		_, err := zed.NetworkingV1().Ingresses("zinc-b").Create(t.Context(), ingress("flood", "", hosts(0)...), metav1.CreateOptions{})
		wantAllowed(t, err)
		eventually(t, "the first flood in the view", func(ctx context.Context) error {
			_, err := ira.NetworkingV1().Ingresses("iron-b").Create(ctx, ingress("probe", "", hosts(0)[0]), dryRun)
			return denialOf(err, "hostname-collision")
		})
		// The name is taken: tenantguard admits the create, the API
		// server refuses it, and its hosts stay held, never seen (by
		// the shared cluster's one replica, in local mode).
		_, err = zed.NetworkingV1().Ingresses("zinc-b").Create(t.Context(), ingress("flood", "", hosts(1)...), metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			t.Fatalf("got %v, want the name taken", err)
		}
		_, err = zed.NetworkingV1().Ingresses("zinc-b").Create(t.Context(), ingress("flood", "", hosts(2)...), metav1.CreateOptions{})
		wantDenied(t, err, "hostname-collision")
		want := fmt.Sprintf(`Ingress "flood" would hold %d new hosts while tenant "zinc" holds %[1]d: a tenant holds at most %d new hosts at a time`, len(hosts(2)), quota.MostHostsHeld)
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v; want %s", err, want)
		}
		_, err = ira.NetworkingV1().Ingresses("iron-b").Create(t.Context(), ingress("flood", "", hosts(3)...), metav1.CreateOptions{})
		wantAllowed(t, err)
	})
}

// createHostBurst creates collisionBurst Ingresses named name, the i-th
// serving host(i), one in each brass namespace, at once, and counts those
// admitted and those refused by hostname-collision; any other error fails.
func createHostBurst(t *testing.T, client kubernetes.Interface, host func(i int) string, name string) (admitted, refused int, elapsed time.Duration) {
	t.Helper()
	return parallelCreates(t, collisionBurst, "hostname-collision", func(ctx context.Context, i int) error {
		_, err := client.NetworkingV1().Ingresses(fmt.Sprintf("brass-%02d", i)).Create(ctx, ingress(name, "", host(i)), metav1.CreateOptions{})
		return err
	})
}

// oneHost is a burst's hosts when all serve host.
func oneHost(host string) func(int) string { return func(int) string { return host } }

// impersonating is a client acting as user, as live.ControlPlane.As, without
// client-side throttling, so that a burst reaches the API server at once.
func impersonating(t *testing.T, user string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(cluster.Admin)
	cfg.QPS, cfg.Burst = 1000, 1000
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{live.TenantsGroup, "system:authenticated"}}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// TestABurstOfOneHostOverReplicas sends collisionBurst parallel creates of
// Ingresses serving one host, from as many namespaces, through a real API
// server, with the webhook served by one replica, by two in the default
// (local) mode and by two in strict mode, behind a round-robin balancer.
// One replica and strict mode must admit exactly one; two local replicas,
// which hold hosts each in its own memory, one or two, and the figure is
// logged. It runs on a control plane of its own, so that it can repoint the
// webhooks.
func TestABurstOfOneHostOverReplicas(t *testing.T) {
	ctx := t.Context()
	c, err := live.Start(ctx, live.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	addTenants(t, c, "  - name: brass\n    owners: [{kind: User, name: bo}]\n    ingress: {hostnameCollision: cluster, hostnames: {allowed: [\"*.brass.example.com\"], allowWildcard: true}}\n")
	grantLedgers(t, c)
	admin := fastClient(t, c.Admin)
	for i := range collisionBurst {
		ns := fmt.Sprintf("brass-%02d", i)
		eventually(t, "namespace "+ns, func(ctx context.Context) error {
			_, err := admin.CoreV1().Namespaces().Create(ctx, namespace(ns, map[string]string{tenantLabel: "brass"}), metav1.CreateOptions{})
			return err
		})
	}
	cfg := rest.CopyConfig(c.Admin)
	cfg.QPS, cfg.Burst = 1000, 1000
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "bo", Groups: []string{live.TenantsGroup, "system:authenticated"}}
	bo, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for n, s := range []struct {
		replicas int
		args     []string
		most     int
	}{{1, nil, 1}, {2, nil, 2}, {2, []string{"--quota-mode=strict"}, 1}} {
		t.Run(fmt.Sprintf("%d replicas %v", s.replicas, s.args), func(t *testing.T) {
			behindBalancer(t, c, s.replicas, s.args...)
			host := fmt.Sprintf("burst%d.brass.example.com", n)
			admitted, refused, elapsed := createHostBurst(t, bo, oneHost(host), fmt.Sprint("burst-", n))
			t.Logf("%d replicas %v: %d of %d parallel creates of one host admitted, %d refused by hostname-collision, burst took %v", s.replicas, s.args, admitted, collisionBurst, refused, elapsed.Round(time.Millisecond))
			if admitted < 1 || admitted > s.most || admitted+refused != collisionBurst {
				t.Fatalf("%d admitted and %d refused by hostname-collision, want 1 to %d of %d", admitted, refused, s.most, collisionBurst)
			}
			// Half of them a wildcard, half a host under it: every two collide.
			wildOrUnder := func(i int) string {
				if i%2 == 0 {
					return fmt.Sprintf("*.wild%d.brass.example.com", n)
				}
				return fmt.Sprintf("shop.wild%d.brass.example.com", n)
			}
			admitted, refused, elapsed = createHostBurst(t, bo, wildOrUnder, fmt.Sprint("wild-", n))
			t.Logf("%d replicas %v: %d of %d parallel creates of a wildcard or a host under it admitted, %d refused by hostname-collision, burst took %v", s.replicas, s.args, admitted, collisionBurst, refused, elapsed.Round(time.Millisecond))
			if admitted < 1 || admitted > s.most || admitted+refused != collisionBurst {
				t.Fatalf("%d admitted and %d refused by hostname-collision, want 1 to %d of %d", admitted, refused, s.most, collisionBurst)
			}
		})
	}
}
