package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/state"
)

// Options configure a Watcher.
type Options struct {
	// RegistryNamespace and RegistryName name the registry ConfigMap.
	RegistryNamespace, RegistryName string
	// Component is the Event source; "tenantguard" when empty.
	Component string
	// ResolveInterval is how often quota resources the API server does not
	// serve yet (a CRD not installed), and a registry refused because its
	// counted resources could not be watched, are tried again; 10 s when 0.
	ResolveInterval time.Duration
	// SyncTimeout bounds the wait for a new quota resource's informer before
	// a registry that counts it is put in force; 30 s when 0.
	SyncTimeout time.Duration
	// Logger receives the watcher's lines; slog.Default() when nil.
	Logger *slog.Logger
	// WebhookTenantLabel, when set, is the label the workload webhooks'
	// namespaceSelector requires. A registry naming another tenantLabel is
	// refused: the API server would never send its tenants' workloads.
	WebhookTenantLabel string
}

// Watcher runs the informers. Its methods are safe for concurrent use.
type Watcher struct {
	opts     Options
	log      *slog.Logger
	store    *state.Store
	client   kubernetes.Interface
	meta     metadata.Interface
	mapper   meta.ResettableRESTMapper
	recorder record.EventRecorder

	mu          sync.Mutex
	ctx         context.Context
	synced      []cache.InformerSynced
	quota       map[schema.GroupResource]*quotaInformer
	unresolved  map[schema.GroupResource]bool
	registryErr error
	// retryRegistry is a registry ConfigMap refused because its counted
	// resources could not be watched; it is loaded again every ResolveInterval.
	retryRegistry *corev1.ConfigMap
}

// Start creates the clients and starts every informer; it returns at once.
// The informers stop when ctx ends. Synced tells when the view is complete.
func Start(ctx context.Context, cfg *rest.Config, store *state.Store, opts Options) (*Watcher, error) {
	if opts.RegistryNamespace == "" || opts.RegistryName == "" {
		return nil, errors.New("the registry ConfigMap namespace and name are required")
	}
	if opts.Component == "" {
		opts.Component = "tenantguard"
	}
	if opts.ResolveInterval == 0 {
		opts.ResolveInterval = 10 * time.Second
	}
	if opts.SyncTimeout == 0 {
		opts.SyncTimeout = 30 * time.Second
	}
	w := &Watcher{
		opts: opts, log: opts.Logger, store: store, ctx: ctx,
		quota:      map[schema.GroupResource]*quotaInformer{},
		unresolved: map[schema.GroupResource]bool{},
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	var err error
	if w.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if w.meta, err = metadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	w.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(w.client.Discovery()))

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: w.client.CoreV1().Events("")})
	w.recorder = broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: opts.Component})
	go func() { <-ctx.Done(); broadcaster.Shutdown() }()

	if err := w.startFixed(ctx); err != nil {
		return nil, err
	}
	go w.retryUnresolved(ctx)
	return w, nil
}

// startFixed starts the informers every registry needs: the registry
// ConfigMap, namespaces and PriorityClasses.
func (w *Watcher) startFixed(ctx context.Context) error {
	typed := informers.NewSharedInformerFactory(w.client, 0)
	registryFactory := informers.NewSharedInformerFactoryWithOptions(w.client, 0,
		informers.WithNamespace(w.opts.RegistryNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", w.opts.RegistryName).String()
		}))
	namespaces := metadatainformer.NewFilteredMetadataInformer(w.meta, corev1.SchemeGroupVersion.WithResource("namespaces"),
		"", 0, cache.Indexers{}, nil).Informer()
	if err := namespaces.SetTransform(slim(true)); err != nil {
		return err
	}
	for _, h := range []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{registryFactory.Core().V1().ConfigMaps().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    w.onRegistry,
			UpdateFunc: func(_, obj any) { w.onRegistry(obj) },
			DeleteFunc: w.onRegistryDeleted,
		}},
		{namespaces, viewHandler(w.store.View(), namespaceObject)},
		{typed.Scheduling().V1().PriorityClasses().Informer(), viewHandler(w.store.View(), priorityClassObject)},
	} {
		reg, err := h.informer.AddEventHandler(h.handler)
		if err != nil {
			return err
		}
		w.synced = append(w.synced, reg.HasSynced)
	}
	typed.Start(ctx.Done())
	registryFactory.Start(ctx.Done())
	go namespaces.RunWithContext(ctx)
	return nil
}

func (w *Watcher) registrySource() string {
	return "configmap " + w.opts.RegistryNamespace + "/" + w.opts.RegistryName
}

// onRegistryDeleted keeps the last good registry in force and says so the
// ways a refused registry is reported: the reload-failure metric, an error
// log line and a Warning Event on the (deleted) ConfigMap. A new ConfigMap
// is loaded as usual; one with the registry in force clears the failure.
func (w *Watcher) onRegistryDeleted(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	err := w.store.RefuseRegistry(w.registrySource(), errors.New("the ConfigMap was deleted"))
	w.mu.Lock()
	w.registryErr = err
	w.retryRegistry = nil // a registry waiting for its counts is gone too
	w.mu.Unlock()
	kept := "the last good registry stays in force until the ConfigMap is created again"
	if w.store.Engine() == nil {
		kept = "no registry is in force; create the ConfigMap"
	}
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		w.recorder.Event(cm, corev1.EventTypeWarning, "RegistryDeleted", err.Error()+"; "+kept)
	}
}

// onRegistry loads a new version of the registry ConfigMap. The informers of
// the resources it counts are started and synced first, so the registry is
// never enforced with a count that is not known yet; if they cannot be, the
// registry is refused and tried again every ResolveInterval.
func (w *Watcher) onRegistry(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	source := w.registrySource()
	snap, err := registry.Parse(source, []byte(cm.Data[registry.DataKey]))
	watchFailed := false
	if err != nil {
		err = w.store.RefuseRegistry(source, err)
	} else if label := w.opts.WebhookTenantLabel; label != "" && snap.TenantLabel() != label {
		err = w.store.RefuseRegistry(source, fmt.Errorf("settings.tenantLabel %q is not %q, the label the webhooks select tenant namespaces by, so no workload of its tenants would be sent to tenantguard; change one of them (chart value tenantLabel)", snap.TenantLabel(), label))
	} else if watchErr := w.watchQuotaResources(snap.QuotaResources()); watchErr != nil {
		watchFailed = true
		err = w.store.RefuseRegistry(source, fmt.Errorf("its counted resources cannot be watched: %w", watchErr))
	}
	changed := false
	if err == nil {
		changed, err = w.store.LoadSnapshot(w.ctx, source, snap)
	}
	w.mu.Lock()
	w.registryErr = err
	w.retryRegistry = nil
	if watchFailed {
		w.retryRegistry = cm // valid, but its counts could not be watched yet
	}
	w.mu.Unlock()
	if err != nil {
		w.recorder.Event(cm, corev1.EventTypeWarning, "RegistryRefused", truncate(err.Error()+"; the last good registry stays in force", 1000))
		return
	}
	w.markInForce(snap.QuotaResources())
	if changed { // not for the same registry again, e.g. only the ConfigMap's metadata changed
		w.recorder.Eventf(cm, corev1.EventTypeNormal, "RegistryLoaded", "registry revision %s with %d tenants is in force", snap.Revision(), snap.Len())
	}
}

// Synced is nil once the registry is in force and every informer has
// delivered its initial list; otherwise it says what is missing.
func (w *Watcher) Synced() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, synced := range w.synced {
		if !synced() {
			return errors.New("the cluster view is not synced yet")
		}
	}
	for gr, qi := range w.quota {
		if qi.inForce && !qi.synced() {
			return fmt.Errorf("the %s informer is not synced yet", gr)
		}
	}
	if w.store.Engine() == nil {
		if w.registryErr != nil {
			return fmt.Errorf("%s refused: %w", w.registrySource(), w.registryErr)
		}
		return fmt.Errorf("waiting for %s", w.registrySource())
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
