// Package clusterview is tenantguard's in-memory view of the cluster: the
// labels of every namespace, tenant-wide object counts kept incrementally,
// and PriorityClasses. Deciding never calls the API server; it reads this
// view. `tenantguard review --objects` fills it from files, the server from
// informers, through the same Upsert and Delete calls.
package clusterview
