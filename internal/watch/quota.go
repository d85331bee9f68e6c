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
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/informers"
)

// activePods leaves out pods that have finished, which ResourceQuota does not
// count either; a pod that finishes leaves the watch as a deletion.
var activePods = fields.AndSelectors(
	fields.OneTermNotEqualSelector("status.phase", "Succeeded"),
	fields.OneTermNotEqualSelector("status.phase", "Failed"),
)

// quotaInformer is the informer of one counted resource in the manager's cache.
type quotaInformer struct {
	gr schema.GroupResource
	// key is the informer's key in the cache: a metadata-only object, or
	// the typed object of a kind that adds to sums (usageKinds).
	key      client.Object
	informer crcache.Informer
	// reg is the view's handler; it has synced once the view holds the
	// resource's initial list.
	reg toolscache.ResourceEventHandlerRegistration
	// inForce is set once a registry counting the resource is in force;
	// only those informers gate readiness.
	inForce bool
}

// watchQuotaResources adds a metadata informer for each counted resource
// not watched yet to the running cache and waits for the new ones to sync.
// A resource the API server does not serve (a CRD not installed) has no
// objects to count and is looked up again every ResolveInterval. Any other
// failure removes the new informers, takes their objects out of the view
// and is returned: the registry that counts them must not be enforced with
// counts of 0.
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
		// controller-runtime's mapper reads discovery again on a miss, so a
		// CRD installed since the last lookup is found.
		version := "" // the preferred one
		if _, typed := usageKinds[gr]; typed {
			version = "v1" // the version of the typed objects usageKinds watches
		}
		gvk, err := w.mapper.KindFor(gr.WithVersion(version)) // discovery, outside the lock
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
		qi, err := w.startQuotaInformer(gr, gvk)
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
		synced := make([]toolscache.InformerSynced, len(started))
		for i, qi := range started {
			synced[i] = qi.reg.HasSynced
		}
		ctx, cancel := context.WithTimeout(w.ctx, w.opts.SyncTimeout)
		defer cancel()
		if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
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

// startQuotaInformer adds the metadata informer of one resource (the typed
// one of a kind that adds to sums) to the cache, which starts it at once (the cache runs), and the view's handler.
func (w *Watcher) startQuotaInformer(gr schema.GroupResource, gvk schema.GroupVersionKind) (*quotaInformer, error) {
	var key client.Object = informers.Metadata(gvk)
	typed, usageKind := usageKinds[gr]
	if usageKind {
		key = typed.DeepCopyObject().(client.Object)
	}
	informer, err := w.cache.GetInformer(w.ctx, key, crcache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", gr, err)
	}
	handler := viewHandler(w.store.View(), countedObject(gr))
	if usageKind {
		handler = usageHandler(w.store.View(), gr, informer)
	}
	reg, err := addHandler(informer, handler)
	if err != nil {
		_ = w.cache.RemoveInformer(w.ctx, key)
		return nil, fmt.Errorf("watching %s: %w", gr, err)
	}
	w.log.Info("watching quota resource", "resource", gvk.GroupVersion().WithResource(gr.Resource).String())
	return &quotaInformer{gr: gr, key: key, informer: informer, reg: reg}, nil
}

// dropQuotaInformer removes an informer from the cache, which stops it, and
// takes what it counted out of the view.
func (w *Watcher) dropQuotaInformer(qi *quotaInformer) {
	_ = qi.informer.RemoveEventHandler(qi.reg)
	_ = w.cache.RemoveInformer(w.ctx, qi.key) // fails only for a kind without a GVK, which key has
	w.mu.Lock()
	delete(w.quota, qi.gr)
	w.mu.Unlock()
	// The cache hands out client-go's informer, whose store still holds what
	// the view was given; the cache itself no longer reads it.
	stored, ok := qi.informer.(interface{ GetStore() toolscache.Store })
	if !ok {
		w.log.Error("cannot list what a removed informer counted; its objects stay in the view", "resource", qi.gr.String(), "informer", fmt.Sprintf("%T", qi.informer))
		return
	}
	view := w.store.View()
	for _, obj := range stored.GetStore().List() {
		switch m := obj.(type) {
		case *metav1.PartialObjectMetadata:
			view.Delete(countedObject(qi.gr)(m))
		case *usageObject:
			view.Delete(usageCounted(qi.gr)(m))
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

// retryUnresolved looks unresolved resources (and kinds that serve hosts)
// up again and loads a registry that was refused for a lookup or sync
// failure again, every ResolveInterval until ctx ends.
func (w *Watcher) retryUnresolved(ctx context.Context) {
	wait.UntilWithContext(ctx, func(context.Context) {
		w.mu.Lock()
		pending := make([]schema.GroupResource, 0, len(w.unresolved))
		for gr := range w.unresolved {
			pending = append(pending, gr)
		}
		retry := w.retryRegistry
		hosts := w.hostsUnresolved
		w.mu.Unlock()
		if hosts {
			w.watchHosts()
		}
		if len(pending) > 0 {
			if err := w.watchQuotaResources(pending); err != nil {
				w.log.Warn("quota resources still not watched", "error", err.Error())
			} else if e := w.store.Engine(); e != nil {
				w.markInForce(e.Registry().QuotaResources())
			}
		}
		if retry != nil {
			w.onRegistry(retry)
		}
	}, w.opts.ResolveInterval)
}

// countedObject turns a counted object's metadata into a view object.
func countedObject(gr schema.GroupResource) func(*metav1.PartialObjectMetadata) clusterview.Object {
	return func(m *metav1.PartialObjectMetadata) clusterview.Object {
		return clusterview.Object{Group: gr.Group, Resource: gr.Resource, Namespace: m.Namespace, Name: m.Name, UID: string(m.UID)}
	}
}
