package informers

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// splitCache is one cache.Cache over two: metadata-only objects in one,
// typed (and unstructured) objects in the other, each with its own ByObject
// settings.
type splitCache struct {
	metadata, typed cache.Cache
}

var _ cache.Cache = splitCache{}

// pick is the cache of an object or list by its Go type.
func (c splitCache) pick(obj runtime.Object) cache.Cache {
	switch obj.(type) {
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return c.metadata
	}
	return c.typed
}

// Get implements client.Reader.
func (c splitCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.pick(obj).Get(ctx, key, obj, opts...)
}

// List implements client.Reader.
func (c splitCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.pick(list).List(ctx, list, opts...)
}

// GetInformer implements cache.Informers.
func (c splitCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	return c.pick(obj).GetInformer(ctx, obj, opts...)
}

// GetInformerForKind implements cache.Informers; a kind alone names a typed
// object.
func (c splitCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	return c.typed.GetInformerForKind(ctx, gvk, opts...)
}

// RemoveInformer implements cache.Informers.
func (c splitCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	return c.pick(obj).RemoveInformer(ctx, obj)
}

// IndexField implements client.FieldIndexer.
func (c splitCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	return c.pick(obj).IndexField(ctx, obj, field, extract)
}

// Start runs both caches until ctx ends.
func (c splitCache) Start(ctx context.Context) error {
	done := make(chan error, 2)
	go func() { done <- c.metadata.Start(ctx) }()
	go func() { done <- c.typed.Start(ctx) }()
	return errors.Join(<-done, <-done)
}

// WaitForCacheSync waits for both caches.
func (c splitCache) WaitForCacheSync(ctx context.Context) bool {
	return c.metadata.WaitForCacheSync(ctx) && c.typed.WaitForCacheSync(ctx)
}
