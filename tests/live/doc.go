// Package live starts a real local control plane (kube-apiserver and etcd
// built from the Go module proxy into tests/tools/bin, run by
// controller-runtime's envtest), runs `tenantguard serve` against it in this
// process, loads the example registry and installs the webhook
// configurations pointing at the server. The e2e tests and `make demo` use it.
package live
