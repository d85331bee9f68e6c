// Package reports turns the audit's rows into policy reports: one
// namespaced report per namespace with violations, and one cluster-scoped
// report for the Namespaces, in the Policy working group's formats — the
// openreports.io/v1alpha1 Report and ClusterReport (the default) or the
// older wgpolicyk8s.io/v1alpha2 PolicyReport and ClusterPolicyReport, whose
// results have the same shape. They are built as unstructured objects, so
// that no Go module of either API is needed: only their CRDs.
package reports
