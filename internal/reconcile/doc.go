// Package reconcile keeps the companion resources of tenant namespaces in
// place inside `tenantguard serve`: a controller-runtime controller on the
// manager of package informers, leader-elected so that several replicas can
// run, reading namespaces as the metadata the cluster view's cache already
// holds and the companions carrying the managed-by label; it server-side applies
// what the generator wants for each namespace (field manager "tenantguard",
// owning only the fields it sets), restores companions that were deleted or
// changed, prunes the labelled companions that are no longer wanted, follows
// registry changes and records an Event on the namespace when it fails.
package reconcile
