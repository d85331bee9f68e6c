// Package server is tenantguard's HTTPS admission server: /validate and
// /mutate answer AdmissionReview v1, /healthz and /readyz are the probes and
// /metrics is Prometheus. The HTTP layer decodes (400 on bad input), the
// engine in the state store decides, and respond.go writes the answer. The
// serving certificate is reloaded from its files when they change.
package server
