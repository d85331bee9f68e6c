// Package load is tenantguard's load harness: it drives admission webhooks
// over HTTPS with keep-alive on loopback, from a fixed request corpus, in
// two modes. Saturate is closed-loop: a fixed number of workers send
// back to back, enough of them that more would not raise the throughput
// (SaturatedWorkers), which gives the saturated throughput. OpenLoop sends at a
// fixed rate and counts each request's latency from the moment it was due,
// so a server that falls behind shows its queueing instead of slowing the
// generator down (no coordinated omission). Latencies go into HDR
// histograms. Every run is bounded in time and requests. Interleave runs
// several targets in turns, so that a ratio between them does not take the
// machine's drift over the run for a difference between them.
//
// The package also serves the null webhook, the ceiling every figure is
// compared with: it decodes the AdmissionReview and answers allowed.
//
// AuditLoad measures admission while serve's background audit runs in the
// same process over the scale cluster, listed page by page from a stand-in
// for the API server (auditCluster), in the audited target's turns only.
//
// tests/load is a Go module of its own (see its go.mod): `go test ./...` at
// the repository root leaves it out, and `make test` runs its tests. `make
// tgload` builds the command, cmd/tgload, into bench-out/tgload, the binary
// that `make bench`, `bench-load`, `bench-compare`, `bench-audit` and `soak`
// run; by hand, `go -C tests/load run ./cmd/tgload
// run|compare|soak|audit-load|opa-files [flags]`, which runs it in
// tests/load, so relative paths among its flags start there. `tgload
// opa-files` writes the OPA bundle, the replicated cluster and one request
// of each kind for `opa bench` (docs/policy-library.md).
package load
