// Package clusterview is tenantguard's in-memory view of the cluster: the
// labels of every namespace, tenant-wide object counts kept incrementally,
// PriorityClasses, and the hosts Ingresses and routes serve, with the holds
// of the requests being decided on a host (as the quota's reservations).
// Deciding never calls the API server; it reads this view. `tenantguard
// review --objects` fills it from files, the server from informers, through
// the same Upsert and Delete calls (UpdateHosts for the hosts).
package clusterview
