// Package reconcile keeps the companion resources of tenant namespaces in
// place inside `tenantguard serve`: a controller-runtime controller,
// leader-elected so that several replicas can run, that server-side applies
// what the generator wants for each namespace (field manager "tenantguard",
// owning only the fields it sets), restores companions that were deleted or
// changed, prunes the labelled companions that are no longer wanted, follows
// registry changes and records an Event on the namespace when it fails.
package reconcile
