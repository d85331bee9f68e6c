// Package reconcile keeps the companion resources of tenant namespaces in
// place inside `tenantguard serve`: a controller-runtime controller on the
// manager of package informers, leader-elected so that several replicas can
// run, reading namespaces as the metadata the cluster view's cache already
// holds and the companions carrying its instance's labels; it server-side
// applies what the generator wants for each namespace (field manager the
// instance's name, "tenantguard" for the default, owning only the fields it
// sets), restores companions that were deleted or
// changed, prunes the labelled companions that are no longer wanted, follows
// registry changes and records an Event on the namespace when it fails.
//
// Servers of different instances (generator.Instance) share a cluster: each
// lists, caches and prunes only the companions carrying its own labels and
// applied by its own field manager, and elects its leader on its own Lease.
package reconcile
