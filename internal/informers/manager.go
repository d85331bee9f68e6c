package informers

import (
	"log/slog"
	"maps"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Layout says which objects a consumer of the cache needs and how they are
// listed and kept. Objects it does not name are cached whole, unselected,
// once something asks for their informer.
type Layout struct {
	// Metadata configures objects cached as metadata only; each key is a
	// Metadata object of the kind.
	Metadata map[client.Object]cache.ByObject
	// MetadataTransform slims every metadata-only object whose kind has no
	// Transform in Metadata, such as the resources counted at runtime.
	MetadataTransform toolscache.TransformFunc
	// Typed configures typed objects.
	Typed map[client.Object]cache.ByObject
	// TypedTransform is applied to every typed (and unstructured) object
	// whose kind has no Transform in Typed, such as the kinds watched only
	// once their CRDs are found: the cache is built before they are.
	TypedTransform toolscache.TransformFunc
}

// With is l together with other. Their maps must not name the same kind
// (a kind has one setting); MetadataTransform and TypedTransform are l's
// unless l has none.
func (l Layout) With(other Layout) Layout {
	out := Layout{Metadata: maps.Clone(l.Metadata), Typed: maps.Clone(l.Typed), MetadataTransform: l.MetadataTransform, TypedTransform: l.TypedTransform}
	if out.Metadata == nil {
		out.Metadata = map[client.Object]cache.ByObject{}
	}
	if out.Typed == nil {
		out.Typed = map[client.Object]cache.ByObject{}
	}
	maps.Copy(out.Metadata, other.Metadata)
	maps.Copy(out.Typed, other.Typed)
	if out.MetadataTransform == nil {
		out.MetadataTransform = other.MetadataTransform
	}
	if out.TypedTransform == nil {
		out.TypedTransform = other.TypedTransform
	}
	return out
}

// Metadata is an empty metadata-only object of a kind: the key of its
// informer and settings, and what Get and List fill.
func Metadata(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

// unindexed makes the informers of metadata-only objects without the
// namespace index controller-runtime gives every informer: it costs about
// 5 MiB per 100,000 counted pods (11% of what their cache holds), and
// nothing lists metadata-only objects by namespace. Such a List fails
// (there is no index to read), rather than answering from a scan.
func unindexed(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, _ toolscache.Indexers) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformer(lw, obj, resync, toolscache.Indexers{})
}

// Options configure the manager.
type Options struct {
	// Layout is what the cache keeps.
	Layout Layout
	// LeaderElectionNamespace holds the Lease that the leader-elected
	// runnables (the companion reconciler) wait for; leader election is off
	// when empty. The cache runs on every replica either way.
	LeaderElectionNamespace string
	// LeaderElectionID names the Lease.
	LeaderElectionID string
	// Logger receives the manager's lines; slog.Default() when nil.
	Logger *slog.Logger
}

// NewManager builds the manager; nothing runs until its Start.
func NewManager(cfg *rest.Config, opts Options) (manager.Manager, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return manager.New(cfg, manager.Options{
		Logger:                        logr.FromSlogHandler(log.Handler()),
		NewCache:                      opts.Layout.newCache,
		Metrics:                       metricsserver.Options{BindAddress: "0"}, // tenantguard serves its own /metrics
		LeaderElection:                opts.LeaderElectionNamespace != "",
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionReleaseOnCancel: true,
	})
}

// newCache is the manager's cache: the split of the layout. Reading a kind
// nobody asked an informer for fails instead of starting one, so that no
// read quietly caches a kind whole (say, full Namespace objects beside their
// metadata).
func (l Layout) newCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	opts.ReaderFailOnMissingInformer = true
	metadata, typed := opts, opts
	metadata.ByObject, metadata.DefaultTransform = l.Metadata, l.MetadataTransform
	metadata.NewInformer = unindexed
	typed.ByObject, typed.DefaultTransform = l.Typed, l.TypedTransform
	m, err := cache.New(cfg, metadata)
	if err != nil {
		return nil, err
	}
	t, err := cache.New(cfg, typed)
	if err != nil {
		return nil, err
	}
	return splitCache{metadata: m, typed: t}, nil
}
