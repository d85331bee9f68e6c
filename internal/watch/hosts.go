package watch

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/tenantguard/tenantguard/internal/clusterview"
)

// servedObject is an Ingress or route as the informer cache keeps it: its
// identity, the resource version informers need, and the hosts it serves,
// normalized. Nothing reads it from the cache but the view's handler; as a
// type of its own it costs a third of the unstructured object it replaces
// (BenchmarkSlimHosts).
type servedObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Hosts []string
}

// DeepCopyObject implements runtime.Object.
func (o *servedObject) DeepCopyObject() runtime.Object {
	out := &servedObject{TypeMeta: o.TypeMeta, Hosts: slices.Clone(o.Hosts)}
	o.DeepCopyInto(&out.ObjectMeta)
	return out
}

// slimHosts is the cache's transform of the objects that serve hosts
// (Ingresses and the Gateway API's routes, watched unstructured): it turns
// them into servedObjects; everything else passes as is, already slimmed
// objects too (client-go may hand one back on a relist).
func slimHosts(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	gvk := u.GroupVersionKind()
	if !clusterview.ServesHosts(gvk.Group, gvk.Kind) {
		return obj, nil
	}
	return &servedObject{
		TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()},
		ObjectMeta: metav1.ObjectMeta{
			Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
		},
		Hosts: clusterview.HostsOf(gvk.Group, gvk.Kind, u.GetNamespace(), u.Object),
	}, nil
}

// hostObject is a slimmed Ingress or route as the view's host index takes it.
func hostObject(o *servedObject) *clusterview.Object {
	gvk := o.GetObjectKind().GroupVersionKind()
	return &clusterview.Object{Group: gvk.Group, Kind: gvk.Kind, Namespace: o.Namespace, Name: o.Name, Hosts: o.Hosts, UID: string(o.UID)}
}

// hostHandler keeps the view's host index in step with an informer of a
// kind that serves hosts: every change hands the index the object as it
// was and as it is. Deletions seen only after a relist arrive as
// tombstones and are unwrapped.
func hostHandler(view *clusterview.View) cache.ResourceEventHandler {
	toObject := func(obj any) *clusterview.Object {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		if o, ok := obj.(*servedObject); ok {
			return hostObject(o)
		}
		return nil
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o := toObject(obj); o != nil {
				view.UpdateHosts(nil, o)
			}
		},
		UpdateFunc: func(old, obj any) {
			if o := toObject(obj); o != nil {
				view.UpdateHosts(toObject(old), o)
			}
		},
		DeleteFunc: func(obj any) {
			if o := toObject(obj); o != nil {
				view.UpdateHosts(o, nil)
			}
		},
	}
}

// watchHosts starts an informer of every kind that serves hosts and is not
// watched yet: Ingresses, and the Gateway API's routes once their CRDs are
// installed. A kind the API server does not serve is looked up again every
// ResolveInterval (retryUnresolved), so a CRD installed later is found. It
// does not wait for the informers to sync: Synced does.
func (w *Watcher) watchHosts() {
	for _, k := range clusterview.HostKinds() {
		w.mu.Lock()
		_, running := w.hosts[k.Kind]
		w.mu.Unlock()
		if running {
			continue
		}
		// controller-runtime's mapper reads discovery again on a miss
		gvk, err := w.mapper.KindFor(schema.GroupVersionResource{Group: k.Group, Resource: k.Resource})
		if err != nil {
			w.mu.Lock()
			w.hostsUnresolved = true
			w.mu.Unlock()
			if !meta.IsNoMatchError(err) {
				w.log.Warn("cannot look up a kind that serves hosts; trying again", "kind", k.Group+"/"+k.Kind, "error", err.Error())
			}
			continue
		}
		reg, err := w.startHostInformer(gvk)
		if err != nil {
			w.mu.Lock()
			w.hostsUnresolved = true
			w.mu.Unlock()
			w.log.Warn("cannot watch a kind that serves hosts; trying again", "kind", gvk.String(), "error", err.Error())
			continue
		}
		w.mu.Lock()
		w.hosts[k.Kind] = reg
		w.mu.Unlock()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hostsUnresolved = len(w.hosts) < len(clusterview.HostKinds())
}

// startHostInformer adds the unstructured informer of a kind that serves
// hosts to the running cache, slimmed by slimHosts, and the view's handler.
func (w *Watcher) startHostInformer(gvk schema.GroupVersionKind) (cache.ResourceEventHandlerRegistration, error) {
	key := &unstructured.Unstructured{}
	key.SetGroupVersionKind(gvk)
	informer, err := w.cache.GetInformer(w.ctx, key, crcache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", gvk, err)
	}
	reg, err := addHandler(informer, hostHandler(w.store.View()))
	if err != nil {
		_ = w.cache.RemoveInformer(w.ctx, key)
		return nil, fmt.Errorf("watching %s: %w", gvk, err)
	}
	w.log.Info("watching the hosts of a kind", "kind", gvk.String())
	return reg, nil
}
