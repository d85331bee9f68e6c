// Package metrics holds tenantguard's Prometheus metrics: admission requests
// by webhook and decision, violations by rule and mode, decision latency with
// sub-millisecond buckets, and the registry and policy reload state. Each
// server has its own prometheus.Registry, so tests read exact values.
package metrics
