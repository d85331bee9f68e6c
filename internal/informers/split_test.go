package informers_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tenantguard/tenantguard/internal/informers"
	"github.com/tenantguard/tenantguard/tests/live"
)

// TestAKindIsCachedTypedAndAsMetadataApart caches ConfigMaps twice on a
// real API server: typed, field-selected to one ConfigMap (as the registry
// is watched), and as metadata, unselected (as a tenant quota counting
// configmaps needs). Each sees what its own setting selects; metadata-only
// objects are not indexed by namespace; a kind nobody asked an informer for
// is not read at all.
func TestAKindIsCachedTypedAndAsMetadataApart(t *testing.T) {
	ctx := t.Context()
	cp, err := live.StartControlPlane(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	const ns = "split"
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"registry", "other"} {
		if _, err := cp.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	configMapKind := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	mgr, err := informers.NewManager(cp.Admin, informers.Options{Layout: informers.Layout{
		Typed: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {
			Field: fields.SelectorFromSet(fields.Set{"metadata.namespace": ns, "metadata.name": "registry"}),
		}},
		MetadataTransform: func(obj any) (any, error) {
			if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
				m.Annotations = map[string]string{"slimmed": "yes"}
			}
			return obj, nil
		},
	}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	c := mgr.GetCache()
	for _, obj := range []client.Object{&corev1.ConfigMap{}, informers.Metadata(configMapKind)} {
		if _, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			t.Fatal(err)
		}
	}
	stop := live.Run(ctx, mgr.Start)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("the manager stopped with %v", err)
		}
	}()
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !c.WaitForCacheSync(syncCtx) {
		t.Fatal("the cache did not sync")
	}

	var typed corev1.ConfigMapList
	if err := c.List(ctx, &typed, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(typed.Items) != 1 || typed.Items[0].Name != "registry" {
		t.Errorf("typed ConfigMaps %v, want the registry alone", names(typed.Items))
	}
	metadata := &metav1.PartialObjectMetadataList{}
	metadata.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := c.List(ctx, metadata); err != nil {
		t.Fatal(err)
	}
	if got := names(metadata.Items); !slices.Contains(got, "registry") || !slices.Contains(got, "other") {
		t.Errorf("ConfigMap metadata %v, want every ConfigMap of the namespace", got)
	}
	if err := c.List(ctx, metadata, client.InNamespace(ns)); err == nil {
		t.Error("metadata-only objects listed by namespace, which has no index")
	}
	for _, m := range metadata.Items {
		if m.Annotations["slimmed"] != "yes" {
			t.Errorf("%s not transformed by MetadataTransform", m.Name)
		}
	}

	var namespace corev1.Namespace
	err = c.Get(ctx, client.ObjectKey{Name: ns}, &namespace)
	var notCached *cache.ErrResourceNotCached
	if !errors.As(err, &notCached) {
		t.Errorf("reading a kind without an informer: %v, want ErrResourceNotCached", err)
	}
}

func names[T any, P interface {
	*T
	GetName() string
}](items []T) []string {
	out := make([]string, len(items))
	for i := range items {
		out[i] = P(&items[i]).GetName()
	}
	return out
}
