package watch_test

import (
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/tenantguard/tenantguard/generator"
	"github.com/tenantguard/tenantguard/internal/reconcile"
	"github.com/tenantguard/tenantguard/internal/watch"
)

// TestTheCacheLayoutNamesOnlyCoreKinds keeps the layout's own entries to
// the core group, which every supported Kubernetes serves: the cache looks
// each entry's kind up when it is made, so an entry of resource.k8s.io/v1
// (served from 1.34) would keep serve from starting on older clusters,
// whether or not a registry counts devices.
func TestTheCacheLayoutNamesOnlyCoreKinds(t *testing.T) {
	l := watch.CacheLayout(watch.Options{RegistryNamespace: "ns", RegistryName: "registry"})
	for obj := range l.Typed {
		gvk, err := apiutil.GVKForObject(obj, scheme.Scheme)
		if err != nil {
			t.Fatal(err)
		}
		if gvk.Group != "" {
			t.Errorf("the layout names %s, which a cluster may not serve", gvk)
		}
	}
	// ResourceClaims are slimmed to their usage by the typed transform, also
	// in serve's layout, which adds the reconciler's.
	l = l.With(reconcile.CacheLayout(generator.Default))
	slim, err := l.TypedTransform(&resourcev1.ResourceClaim{})
	if err != nil {
		t.Fatal(err)
	}
	if _, full := slim.(*resourcev1.ResourceClaim); full {
		t.Error("a ResourceClaim is cached whole")
	}
}
