// Package request builds the AdmissionReview v1 the API server would send
// for an object: `tenantguard review -f` builds one for each object of a
// manifest, and the audit (package audit) one CREATE for each existing
// object it checks.
package request
