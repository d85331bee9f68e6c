// Package generator computes the companion resources of tenant namespaces
// from a registry snapshot: a ResourceQuota and LimitRange from the tenant's
// companions, a NetworkPolicy admitting ingress only from the same tenant's
// namespaces, RoleBindings giving owners their ClusterRoles and the right to
// delete the namespace, additional RoleBindings, and cluster-wide the
// ClusterRoles and the ClusterRoleBinding that let owners create namespaces.
//
// Every name and label it writes derives from an Instance, one server (one
// Helm release) among those sharing a cluster; the default instance's are the
// names of the versions before instances.
//
// It is pure: snapshot and namespaces in, objects out, in a deterministic
// order with deterministic names, no I/O. `tenantguard generate` prints its
// output and the reconciler in `tenantguard serve` applies it.
package generator
