// Package e2e runs tenantguard against a real kube-apiserver and etcd: the
// API server calls `tenantguard serve` through real webhook configurations
// while the tests act as tenant owners, strangers and administrators.
package e2e
