// Package audit checks objects that already exist against the registry and
// the rules, as if each were created now by its namespace's tenant: a CREATE
// built from the object as stored (less the metadata the API server sets),
// decided as admission decides it, mutations first (engine.ReviewExisting,
// which leaves the object's own place out of its tenant's counts). Rules
// whose METADATA says audit: false (about changes, not objects) are left
// out. `tenantguard audit` runs it on files; serve's leader on the cluster
// (package auditloop).
package audit
