package watch_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/informers"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/internal/watch"
	"github.com/tenantguard/tenantguard/tests/live"
)

// TestTheHostIndexFollowsIngressesAndRoutesFoundLater runs the watcher on a
// real API server without the Gateway API: Ingresses feed the host index
// (created, updated, deleted), and HTTPRoutes do once the CRDs are
// installed, found by the next lookup.
func TestTheHostIndexFollowsIngressesAndRoutesFoundLater(t *testing.T) {
	ctx := t.Context()
	cp, err := live.StartControlPlaneWith(ctx, live.ControlPlaneOptions{NoGatewayAPI: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	core := cp.Client.CoreV1()
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "tenantguard-system"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "oil-a", Labels: map[string]string{registry.DefaultTenantLabel: "oil"}}},
	} {
		if _, err := core.Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tenantguard-registry"}, Data: map[string]string{registry.DataKey: registryDoc}}
	if _, err := core.ConfigMaps("tenantguard-system").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ingresses := cp.Client.NetworkingV1().Ingresses("oil-a")
	web := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: networkingv1.IngressSpec{
		Rules: []networkingv1.IngressRule{{Host: "web.oil.example.com"}},
		TLS:   []networkingv1.IngressTLS{{Hosts: []string{"tls.oil.example.com"}}},
	}}
	if web, err = ingresses.Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	discard := slog.New(slog.DiscardHandler)
	view := clusterview.New(registry.DefaultTenantLabel)
	store := state.New(view, state.Options{Logger: discard})
	if err := store.LoadPolicy(ctx, "embedded", nil); err != nil {
		t.Fatal(err)
	}
	opts := watch.Options{RegistryNamespace: "tenantguard-system", RegistryName: "tenantguard-registry", Logger: discard, ResolveInterval: 200 * time.Millisecond}
	mgr, err := informers.NewManager(cp.Admin, informers.Options{Layout: watch.CacheLayout(opts), Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watch.New(ctx, mgr, store, opts)
	if err != nil {
		t.Fatal(err)
	}
	stop := live.Run(ctx, mgr.Start)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("the manager stopped with %v", err)
		}
	}()
	eventually(t, "the view synced", w.Synced)
	serves := func(want ...string) func() error {
		return func() error {
			asking := clusterview.Holder{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute", Namespace: "gas-a", Name: "probe"}
			var got []string
			for host, holders := range view.HostHolders(asking, []string{"web.oil.example.com", "tls.oil.example.com", "new.oil.example.com", "api.oil.example.com", "x.oil.example.com"}) {
				for _, h := range holders {
					got = append(got, fmt.Sprintf("%s=%s/%s/%s@%s", host, h.Kind, h.Namespace, h.Name, h.Tenant))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				return fmt.Errorf("hosts served %v, want %v", got, want)
			}
			return nil
		}
	}
	// its TLS host names its certificate and serves nothing
	if err := serves("web.oil.example.com=Ingress/oil-a/web@oil")(); err != nil {
		t.Fatalf("synced without the Ingress: %v", err)
	}
	web.Spec.Rules[0].Host = "new.oil.example.com"
	if _, err := ingresses.Update(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the updated Ingress's hosts", serves("new.oil.example.com=Ingress/oil-a/web@oil"))
	if err := ingresses.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted Ingress's hosts gone", serves())

	installGatewayAPI(t, cp)
	routes := dynamic.NewForConfigOrDie(cp.Admin).Resource(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}).Namespace("oil-a")
	route := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": "api"}, "spec": map[string]any{"hostnames": []any{"api.oil.example.com"}},
	}}
	if _, err := routes.Create(ctx, route, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the route's host, its CRD installed after the start", serves("api.oil.example.com=HTTPRoute/oil-a/api@oil"))
	// a ListenerSet, or an XListenerSet, serves its listeners' hosts on a
	// shared Gateway only; the one on its own namespace's Gateway comes
	// first, so it is in the view when the other is
	for _, ls := range []struct {
		gvr              schema.GroupVersionResource
		kind, name, host string
		parent           map[string]any
	}{
		{listenerSets, "ListenerSet", "own", "web.oil.example.com", map[string]any{"name": "own"}},
		{listenerSets, "ListenerSet", "shared", "tls.oil.example.com", map[string]any{"name": "shared", "namespace": "infra"}},
		{xListenerSets, "XListenerSet", "own", "web.oil.example.com", map[string]any{"name": "own"}},
		{xListenerSets, "XListenerSet", "shared", "x.oil.example.com", map[string]any{"name": "shared", "namespace": "infra"}},
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": ls.gvr.GroupVersion().String(), "kind": ls.kind, "metadata": map[string]any{"name": ls.name},
			"spec": map[string]any{"parentRef": ls.parent, "listeners": []any{map[string]any{"name": "http", "protocol": "HTTP", "port": int64(80), "hostname": ls.host}}},
		}}
		if _, err := dynamic.NewForConfigOrDie(cp.Admin).Resource(ls.gvr).Namespace("oil-a").Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the hosts of the ListenerSets on a shared Gateway", serves(
		"api.oil.example.com=HTTPRoute/oil-a/api@oil", "tls.oil.example.com=ListenerSet/oil-a/shared@oil", "x.oil.example.com=XListenerSet/oil-a/shared@oil"))
	eventually(t, "the view synced with the route informer", w.Synced)
}

var (
	listenerSets  = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "listenersets"}
	xListenerSets = schema.GroupVersionResource{Group: "gateway.networking.x-k8s.io", Version: "v1alpha1", Resource: "xlistenersets"}
)

// installGatewayAPI installs the CRDs of `make gateway-crds` and waits
// until HTTPRoutes are served.
func installGatewayAPI(t *testing.T, cp *live.ControlPlane) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(live.GatewayAPICRDs(), "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Gateway API CRDs in %s (%v): run `make gateway-crds`", live.GatewayAPICRDs(), err)
	}
	var docs []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(raw))
	}
	force := true
	if _, err := cp.Apply(t.Context(), strings.Join(docs, "\n---\n"), metav1.PatchOptions{FieldManager: "test", Force: &force}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "HTTPRoutes served", func() error {
		_, err := cp.Resource(schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"})
		return err
	})
}
