package watch

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
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

// quotaInformer is the informer of one counted resource.
type quotaInformer struct {
	gvr      schema.GroupVersionResource
	informer cache.SharedIndexInformer
	synced   cache.InformerSynced
	stop     context.CancelFunc
	// inForce is set once a registry counting the resource is in force;
	// only those informers gate readiness.
	inForce bool
}

// watchQuotaResources starts a metadata informer for each counted resource
// not watched yet and waits for the new ones to sync. A resource the API
// server does not serve (a CRD not installed) has no objects to count and is
// looked up again every ResolveInterval. Any other failure stops the new
// informers, takes their objects out of the view and is returned: the
// registry that counts them must not be enforced with counts of 0.
func (w *Watcher) watchQuotaResources(resources []schema.GroupResource) error {
	w.mu.Lock()
	var todo []schema.GroupResource
	for _, gr := range resources {
		if _, running := w.quota[gr]; !running && gr != (schema.GroupResource{Resource: "namespaces"}) {
			todo = append(todo, gr)
		}
	}
	w.mu.Unlock()
	var started []*quotaInformer
	var errs []error
	for _, gr := range todo {
		gvr, err := w.mapper.ResourceFor(gr.WithVersion("")) // discovery, outside the lock
		if err != nil {
			if meta.IsNoMatchError(err) {
				w.mu.Lock()
				w.unresolved[gr] = true
				w.mu.Unlock()
				w.log.Warn("quota resource not served by the API server; nothing to count until it is", "resource", gr.String())
			} else {
				errs = append(errs, fmt.Errorf("looking up %s: %w", gr, err))
			}
			continue
		}
		qi, err := w.startQuotaInformer(gvr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		w.mu.Lock()
		w.quota[gr] = qi
		delete(w.unresolved, gr)
		w.mu.Unlock()
		started = append(started, qi)
	}
	if len(errs) == 0 && len(started) > 0 {
		synced := make([]cache.InformerSynced, len(started))
		for i, qi := range started {
			synced[i] = qi.synced
		}
		ctx, cancel := context.WithTimeout(w.ctx, w.opts.SyncTimeout)
		defer cancel()
		if !cache.WaitForCacheSync(ctx.Done(), synced...) {
			errs = append(errs, fmt.Errorf("the informers of the counted resources did not sync within %s", w.opts.SyncTimeout))
		}
	}
	if len(errs) > 0 {
		for _, qi := range started {
			w.dropQuotaInformer(qi)
		}
		return errors.Join(errs...)
	}
	return nil
}

// startQuotaInformer starts the metadata informer of one resource.
func (w *Watcher) startQuotaInformer(gvr schema.GroupVersionResource) (*quotaInformer, error) {
	var tweak metadatainformer.TweakListOptionsFunc
	if gvr.Group == "" && gvr.Resource == "pods" {
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
	ctx, stop := context.WithCancel(w.ctx)
	go informer.RunWithContext(ctx)
	w.log.Info("watching quota resource", "resource", gvr.String())
	return &quotaInformer{gvr: gvr, informer: informer, synced: reg.HasSynced, stop: stop}, nil
}

// dropQuotaInformer stops an informer and takes what it counted out of the view.
func (w *Watcher) dropQuotaInformer(qi *quotaInformer) {
	qi.stop()
	w.mu.Lock()
	delete(w.quota, qi.gvr.GroupResource())
	w.mu.Unlock()
	view := w.store.View()
	for _, obj := range qi.informer.GetStore().List() {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			view.Delete(countedObject(qi.gvr)(m))
		}
	}
}

// markInForce records that the registry in force counts these resources.
func (w *Watcher) markInForce(resources []schema.GroupResource) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, gr := range resources {
		if qi, ok := w.quota[gr]; ok {
			qi.inForce = true
		}
	}
}

// retryUnresolved looks unresolved resources up again, with fresh discovery,
// and loads a registry that was refused for a lookup or sync failure again.
func (w *Watcher) retryUnresolved(ctx context.Context) {
	wait.UntilWithContext(ctx, func(context.Context) {
		w.mu.Lock()
		pending := make([]schema.GroupResource, 0, len(w.unresolved))
		for gr := range w.unresolved {
			pending = append(pending, gr)
		}
		retry := w.retryRegistry
		w.mu.Unlock()
		if len(pending) > 0 {
			w.mapper.Reset()
			if err := w.watchQuotaResources(pending); err != nil {
				w.log.Warn("quota resources still not watched", "error", err.Error())
			} else if e := w.store.Engine(); e != nil {
				w.markInForce(e.Registry().QuotaResources())
			}
		}
		if retry != nil {
			w.mapper.Reset()
			w.onRegistry(retry)
		}
	}, w.opts.ResolveInterval)
}

// countedObject turns a counted object's metadata into a view object.
func countedObject(gvr schema.GroupVersionResource) func(*metav1.PartialObjectMetadata) clusterview.Object {
	return func(m *metav1.PartialObjectMetadata) clusterview.Object {
		return clusterview.Object{Group: gvr.Group, Resource: gvr.Resource, Namespace: m.Namespace, Name: m.Name}
	}
}
