// Package informers is tenantguard's one informer stack: the
// controller-runtime manager of `tenantguard serve`, whose cache feeds both
// the cluster view (package watch) and the companion reconciler (package
// reconcile). It runs on every replica, since every replica decides
// requests; leader election gates only the reconciler.
//
// The cache keeps metadata-only objects (metav1.PartialObjectMetadata) and
// typed objects apart, in two controller-runtime caches behind one
// cache.Cache: controller-runtime applies a ByObject setting to every
// informer of its kind, so the label selector of the companion RoleBindings
// or the field selector of the registry ConfigMap would otherwise also
// narrow what a tenant quota counting rolebindings or configmaps sees.
// Metadata-only objects are not indexed by namespace (a List of them in one
// namespace fails), which would add about a tenth to what counted pods cost.
package informers
