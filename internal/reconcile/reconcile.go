package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/tenantguard/tenantguard/generator"
	"github.com/tenantguard/tenantguard/internal/informers"
	"github.com/tenantguard/tenantguard/internal/state"
)

// FieldManager is the server-side apply field manager of an instance's
// companions: its name ("tenantguard" for the default instance).
func FieldManager(i generator.Instance) string { return i.Name() }

// clusterKey is the queue key of the cluster-wide RBAC; namespace keys have
// no Namespace part.
var clusterKey = ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "tenantguard", Name: "cluster-rbac"}}

// LeaseName names the leader-election Lease of an instance's reconciler
// ("tenantguard-generator" for the default instance).
func LeaseName(i generator.Instance) string { return i.Name() + "-generator" }

// Options configure the reconciler.
type Options struct {
	// Logger receives the controller's lines; slog.Default() when nil.
	Logger *slog.Logger
	// Instance names what the reconciler writes and finds what it prunes;
	// the zero value is generator.Default.
	Instance generator.Instance
}

// namespaceKind is the kind of the namespaces the reconciler reads, as
// metadata: a name, labels and a deletion timestamp are all it needs.
var namespaceKind = corev1.SchemeGroupVersion.WithKind("Namespace")

// namespaced are new lists of the companion kinds in tenant namespaces, for
// pruning; new for each call, as reconciles run concurrently.
func namespaced() []client.ObjectList {
	return []client.ObjectList{&corev1.ResourceQuotaList{}, &corev1.LimitRangeList{}, &networkingv1.NetworkPolicyList{}, &rbacv1.RoleBindingList{}}
}

// clusterWide are new lists of the cluster-scoped kind the reconciler keeps:
// ClusterRoleBindings. The two namespace ClusterRoles are static; they ship
// with deploy/rbac (writing them would need the server to hold what they
// grant), and `tenantguard generate` prints them for GitOps.
func clusterWide() []client.ObjectList {
	return []client.ObjectList{&rbacv1.ClusterRoleBindingList{}}
}

// clusterBindings are the ClusterRoleBindings of the generator's cluster-wide objects.
func clusterBindings(objs []client.Object) []client.Object {
	var out []client.Object
	for _, o := range objs {
		if _, ok := o.(*rbacv1.ClusterRoleBinding); ok {
			out = append(out, o)
		}
	}
	return out
}

// Reconciler applies the generator's output for one namespace at a time.
type Reconciler struct {
	instance generator.Instance
	client   client.Client
	store    *state.Store
	recorder recorder.EventRecorder
	log      *slog.Logger
}

// CacheLayout is what the reconciler of instance i needs of the manager's
// cache: the companion kinds carrying its labels (Instance.Selector), and
// nothing else of them.
func CacheLayout(i generator.Instance) informers.Layout {
	typed := map[client.Object]cache.ByObject{}
	for _, obj := range []client.Object{&corev1.ResourceQuota{}, &corev1.LimitRange{}, &networkingv1.NetworkPolicy{}, &rbacv1.RoleBinding{}, &rbacv1.ClusterRoleBinding{}} {
		typed[obj] = cache.ByObject{Label: i.Selector()}
	}
	return informers.Layout{Typed: typed}
}

// Setup adds the controller to mgr, whose cache must include
// CacheLayout(opts.Instance).
// It runs while mgr runs and, with leader election, only on the leader.
func Setup(mgr manager.Manager, store *state.Store, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	r := &Reconciler{instance: opts.Instance, client: mgr.GetClient(), store: store, recorder: mgr.GetEventRecorder(opts.Instance.Name()), log: log}
	resync := make(chan event.GenericEvent)
	toNamespace := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []ctrl.Request {
		return []ctrl.Request{{NamespacedName: types.NamespacedName{Name: obj.GetNamespace()}}}
	})
	toCluster := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []ctrl.Request {
		return []ctrl.Request{clusterKey}
	})
	// A process serves one registry and runs one companion controller, so
	// controller-runtime's check that names are unique in the process
	// would only refuse a second server started in one process after the
	// first, as the e2e tests start one per control plane.
	skipNameCheck := true
	err := ctrl.NewControllerManagedBy(mgr).Named("companions").
		WithOptions(controller.Options{MaxConcurrentReconciles: 4, SkipNameValidation: &skipNameCheck}).
		For(informers.Metadata(namespaceKind)).
		Watches(&corev1.ResourceQuota{}, toNamespace, builder.WithPredicates(quotaWritten)).
		Watches(&corev1.LimitRange{}, toNamespace).
		Watches(&networkingv1.NetworkPolicy{}, toNamespace).
		Watches(&rbacv1.RoleBinding{}, toNamespace).
		Watches(&rbacv1.ClusterRoleBinding{}, toCluster).
		WatchesRawSource(source.Channel(resync, handler.EnqueueRequestsFromMapFunc(r.everything))).
		Complete(r)
	if err != nil {
		return fmt.Errorf("creating the companion controller: %w", err)
	}
	changes := store.Subscribe()
	// One full pass when the controller starts: the registry may have been
	// loaded before, and nothing else triggers the cluster RBAC. Then one
	// after every change. A leader-elected runnable, as the controller.
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		for {
			select {
			case resync <- event.GenericEvent{Object: informers.Metadata(namespaceKind)}:
			case <-ctx.Done():
				return nil
			}
			select {
			case <-changes:
			case <-ctx.Done():
				return nil
			}
		}
	}))
}

// everything is every namespace and the cluster RBAC: a new registry may
// change any of them.
func (r *Reconciler) everything(ctx context.Context, _ client.Object) []ctrl.Request {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.client.List(ctx, list); err != nil {
		r.log.Error("listing namespaces", "error", err.Error())
		return []ctrl.Request{clusterKey}
	}
	out := make([]ctrl.Request, 0, len(list.Items)+1)
	out = append(out, clusterKey)
	for _, ns := range list.Items {
		out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Name: ns.Name}})
	}
	return out
}

// Reconcile applies and prunes the companions of one namespace, or the
// cluster RBAC for clusterKey.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	e := r.store.Engine()
	if e == nil {
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil // no registry yet
	}
	snap := e.Registry()
	if req == clusterKey {
		return ctrl.Result{}, r.sync(ctx, "", clusterBindings(r.instance.Cluster(snap)), clusterWide())
	}
	ns := informers.Metadata(namespaceKind)
	if err := r.client.Get(ctx, req.NamespacedName, ns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ns.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // its companions go with it
	}
	desired := r.instance.ForNamespace(snap, generator.Namespace{Name: ns.Name, Labels: ns.Labels})
	if err := r.sync(ctx, ns.Name, desired, namespaced()); err != nil {
		r.recorder.Eventf(ns, nil, corev1.EventTypeWarning, "CompanionsFailed", "Reconcile", "keeping the companion resources of namespace %q in place failed: %v", ns.Name, err)
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// sync applies the desired objects, then deletes the labelled objects of the
// kinds in lists (in namespace, or cluster-wide for "") that are not desired.
func (r *Reconciler) sync(ctx context.Context, namespace string, desired []client.Object, lists []client.ObjectList) error {
	want := map[string]bool{}
	var errs []error
	for _, obj := range desired {
		want[r.key(obj)] = true
		u, err := generator.Unstructured(obj)
		if err == nil {
			err = r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager(r.instance)), client.ForceOwnership)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("applying %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err))
		}
	}
	for _, list := range lists {
		opts := []client.ListOption{client.MatchingLabelsSelector{Selector: r.instance.Selector()}}
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		if err := r.client.List(ctx, list, opts...); err != nil {
			errs = append(errs, err)
			continue
		}
		items, err := itemsOf(list)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, obj := range items {
			if want[r.key(obj)] || !r.appliedByUs(obj) {
				continue // wanted, or labelled by someone else: not ours to delete
			}
			if err := r.client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("pruning %s: %w", obj.GetName(), err))
				continue
			}
			r.log.Info("pruned companion", "namespace", obj.GetNamespace(), "name", obj.GetName(), "kind", fmt.Sprintf("%T", obj))
		}
	}
	return errors.Join(errs...)
}

// appliedByUs is true when the instance's field manager applied the object.
func (r *Reconciler) appliedByUs(obj client.Object) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == FieldManager(r.instance) && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// key identifies an object by kind and name within one sync.
func (r *Reconciler) key(obj client.Object) string {
	gvk, err := apiutil.GVKForObject(obj, r.client.Scheme())
	if err != nil {
		return fmt.Sprintf("%T/%s", obj, obj.GetName())
	}
	return gvk.Kind + "/" + obj.GetName()
}

// itemsOf returns the objects of a typed list.
func itemsOf(list client.ObjectList) ([]client.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(items))
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok {
			return nil, fmt.Errorf("unexpected item %T", item)
		}
		out = append(out, obj)
	}
	return out, nil
}
