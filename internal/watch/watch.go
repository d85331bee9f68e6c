package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/tenantguard/tenantguard/internal/informers"
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

// Watcher feeds the state store and the view from the manager's cache. Its
// methods are safe for concurrent use.
type Watcher struct {
	opts     Options
	log      *slog.Logger
	store    *state.Store
	cache    crcache.Cache
	mapper   meta.RESTMapper
	recorder record.EventRecorder
	// ctx is the context the manager runs with.
	ctx context.Context
	// ready is closed once the manager's cache has synced. Counted
	// resources are watched only from then on: an informer added earlier
	// would join the manager's wait for its first sync, which one that never
	// syncs (a resource tenantguard may not list) would hold up for good.
	ready chan struct{}

	mu          sync.Mutex
	synced      []toolscache.InformerSynced
	quota       map[schema.GroupResource]*quotaInformer
	unresolved  map[schema.GroupResource]bool
	registryErr error
	// retryRegistry is a registry ConfigMap refused because its counted
	// resources could not be watched; it is loaded again every ResolveInterval.
	retryRegistry *corev1.ConfigMap
	// hosts are the view handlers of the informers of the kinds that serve
	// hosts, by kind; hostsUnresolved is set while one is not watched (its
	// CRD is not installed), and it is looked up every ResolveInterval.
	hosts           map[string]toolscache.ResourceEventHandlerRegistration
	hostsUnresolved bool
}

var (
	namespaceKind = corev1.SchemeGroupVersion.WithKind("Namespace")
)

// CacheLayout is what the watcher needs of the manager's cache: namespaces
// as metadata with their labels, the registry ConfigMap alone, and every
// other metadata-only object (the counted resources) stripped to its
// identity, finished pods left out.
func CacheLayout(opts Options) informers.Layout {
	return informers.Layout{
		Metadata: map[client.Object]crcache.ByObject{
			informers.Metadata(namespaceKind): {Transform: slim(true)},
		},
		MetadataTransform: slim(false),
		// Ingresses and routes, watched unstructured once their kinds are
		// found, are slimmed to their identity and hosts; ResourceClaims,
		// watched once a key counts devices, keep their usage alone.
		TypedTransform: typedTransform,
		Typed: map[client.Object]crcache.ByObject{
			// The namespace in the selector makes the list namespaced: the
			// server may read the ConfigMaps of its own namespace only.
			&corev1.ConfigMap{}: {Field: fields.SelectorFromSet(fields.Set{
				"metadata.namespace": opts.RegistryNamespace, "metadata.name": opts.RegistryName,
			})},
			// Pods and claims, counted and summed, keep their usage alone.
			&corev1.Pod{}:                   {Field: activePods, Transform: usageTransform},
			&corev1.PersistentVolumeClaim{}: {Transform: usageTransform},
		},
	}
}

// typedTransform slims the typed and unstructured objects the layout gives
// no transform of their own: a ResourceClaim to its usage, an Ingress or
// route to its hosts. ResourceClaims have no entry in the layout's Typed, as
// pods have: the cache looks every entry's kind up when it is made, which
// fails where resource.k8s.io/v1 is not served (Kubernetes before 1.34).
func typedTransform(obj any) (any, error) {
	if _, ok := obj.(*resourcev1.ResourceClaim); ok {
		return usageTransform(obj)
	}
	return slimHosts(obj)
}

// New adds the informers every registry needs (the registry ConfigMap,
// namespaces, PriorityClasses) to mgr's cache, built with
// CacheLayout(opts), and the watcher to mgr, which starts it on every
// replica once the cache has synced. ctx is the context mgr runs with.
// Synced tells when the view is complete.
func New(ctx context.Context, mgr manager.Manager, store *state.Store, opts Options) (*Watcher, error) {
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
		cache: mgr.GetCache(), mapper: mgr.GetRESTMapper(), ready: make(chan struct{}),
		quota:      map[schema.GroupResource]*quotaInformer{},
		unresolved: map[schema.GroupResource]bool{},
		hosts:      map[string]toolscache.ResourceEventHandlerRegistration{},
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	clientset, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, err
	}
	// client-go's recorder writes core/v1 Events, which the correlator keeps
	// apart by message. The manager's recorder (events.k8s.io) would fold a
	// second RegistryRefused on the ConfigMap, with a new reason, into the
	// series of the first, whose message would stay.
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: clientset.CoreV1().Events("")})
	w.recorder = broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: opts.Component})
	go func() { <-ctx.Done(); broadcaster.Shutdown() }()

	if err := w.addFixed(ctx); err != nil {
		return nil, err
	}
	if err := mgr.Add(w); err != nil {
		return nil, err
	}
	return w, nil
}

// Start is run by the manager once its cache has synced: from then on
// registries are loaded and counted resources watched. The kinds that serve
// hosts are watched first, so that the view is not synced before their
// informers are. It tries unresolved resources and kinds again until ctx
// ends.
func (w *Watcher) Start(ctx context.Context) error {
	w.watchHosts()
	close(w.ready)
	w.retryUnresolved(ctx)
	return nil
}

// NeedLeaderElection is false: every replica decides requests.
func (w *Watcher) NeedLeaderElection() bool { return false }

// waitReady waits until the manager's cache has synced; it is false when
// the manager stopped first.
func (w *Watcher) waitReady() bool {
	select {
	case <-w.ready:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// addFixed adds the informers every registry needs: the registry
// ConfigMap, namespaces and PriorityClasses.
func (w *Watcher) addFixed(ctx context.Context) error {
	for _, h := range []struct {
		obj     client.Object
		handler toolscache.ResourceEventHandler
	}{
		{&corev1.ConfigMap{}, toolscache.ResourceEventHandlerFuncs{
			AddFunc:    w.onRegistry,
			UpdateFunc: func(_, obj any) { w.onRegistry(obj) },
			DeleteFunc: w.onRegistryDeleted,
		}},
		{informers.Metadata(namespaceKind), viewHandler(w.store.View(), namespaceObject)},
		{&schedulingv1.PriorityClass{}, viewHandler(w.store.View(), priorityClassObject)},
	} {
		informer, err := w.cache.GetInformer(ctx, h.obj, crcache.BlockUntilSynced(false))
		if err != nil {
			return err
		}
		reg, err := addHandler(informer, h.handler)
		if err != nil {
			return err
		}
		w.synced = append(w.synced, reg.HasSynced)
	}
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
	if !w.waitReady() {
		return
	}
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
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
	if !ok || !w.waitReady() {
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
		if qi.inForce && !qi.reg.HasSynced() {
			return fmt.Errorf("the %s informer is not synced yet", gr)
		}
	}
	for kind, reg := range w.hosts {
		if !reg.HasSynced() {
			return fmt.Errorf("the %s informer is not synced yet", kind)
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
