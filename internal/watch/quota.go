package watch

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/tenantguard/tenantguard/internal/clusterview"
)

// activePods leaves out pods that have finished, which ResourceQuota does not
// count either; a pod that finishes leaves the watch as a deletion.
var activePods = fields.AndSelectors(
	fields.OneTermNotEqualSelector("status.phase", "Succeeded"),
	fields.OneTermNotEqualSelector("status.phase", "Failed"),
).String()

// watchQuotaResources starts a metadata informer for each counted resource
// not watched yet, and waits for the new ones to sync. Resources the API
// server does not serve are retried every ResolveInterval.
func (w *Watcher) watchQuotaResources(resources []schema.GroupResource) error {
	var started []cache.InformerSynced
	w.mu.Lock()
	for _, gr := range resources {
		if synced, err := w.startQuotaInformer(gr); err != nil {
			w.unresolved[gr] = true
			w.log.Warn("quota resource not served by the API server; its count is 0 until it is", "resource", gr.String(), "error", err.Error())
		} else if synced != nil {
			started = append(started, synced)
		}
	}
	w.mu.Unlock()
	if len(started) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.opts.SyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), started...) {
		return fmt.Errorf("after %s", w.opts.SyncTimeout)
	}
	return nil
}

// startQuotaInformer starts the informer of one resource; it returns nil, nil
// when one runs already. w.mu is held.
func (w *Watcher) startQuotaInformer(gr schema.GroupResource) (cache.InformerSynced, error) {
	if gr.Group == "" && gr.Resource == "namespaces" {
		return nil, nil // always watched
	}
	if _, running := w.quota[gr]; running {
		return nil, nil
	}
	gvr, err := w.mapper.ResourceFor(gr.WithVersion(""))
	if err != nil {
		return nil, err
	}
	var tweak metadatainformer.TweakListOptionsFunc
	if gr.Group == "" && gr.Resource == "pods" {
		tweak = func(o *metav1.ListOptions) { o.FieldSelector = activePods }
	}
	informer := metadatainformer.NewFilteredMetadataInformer(w.meta, gvr, "", 0, cache.Indexers{}, tweak).Informer()
	if err := informer.SetTransform(slim(false)); err != nil {
		return nil, err
	}
	reg, err := informer.AddEventHandler(viewHandler(w.store.View(), countedObject(gvr)))
	if err != nil {
		return nil, err
	}
	go informer.RunWithContext(w.ctx)
	w.quota[gr] = reg.HasSynced
	delete(w.unresolved, gr)
	w.log.Info("watching quota resource", "resource", gvr.String())
	return reg.HasSynced, nil
}

// retryUnresolved looks unresolved resources up again, with fresh discovery.
func (w *Watcher) retryUnresolved(ctx context.Context) {
	wait.UntilWithContext(ctx, func(context.Context) {
		w.mu.Lock()
		pending := make([]schema.GroupResource, 0, len(w.unresolved))
		for gr := range w.unresolved {
			pending = append(pending, gr)
		}
		w.mu.Unlock()
		if len(pending) > 0 {
			w.mapper.Reset()
			_ = w.watchQuotaResources(pending)
		}
	}, w.opts.ResolveInterval)
}

// countedObject turns a counted object's metadata into a view object.
func countedObject(gvr schema.GroupVersionResource) func(*metav1.PartialObjectMetadata) clusterview.Object {
	return func(m *metav1.PartialObjectMetadata) clusterview.Object {
		return clusterview.Object{Group: gvr.Group, Resource: gvr.Resource, Namespace: m.Namespace, Name: m.Name}
	}
}
