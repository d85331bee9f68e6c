// Package auditloop runs the audit (package audit) in `tenantguard serve`:
// a manager runnable that only the elected leader runs, every interval and
// shortly after each registry or policy change. It lists what the audit
// checks from the API server page by page (a few requests per kind, never
// one per object, and no cache of whole objects kept between audits),
// checks each object on one goroutine that yields between batches, so that
// admission keeps the CPUs, and writes the results as policy reports
// (package reports) with server-side apply, pruning the reports of
// namespaces that are clean again. The gauges of package metrics tell the
// violations by tenant and rule and the last audit's duration and time.
package auditloop
