// Package scale generates deterministic large fixtures for benchmarks: a
// registry of n tenants shaped like the example's oil, a cluster view with
// namespaces and pods for each, and pod CREATE reviews.
package scale
