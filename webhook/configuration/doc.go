// Package configuration builds the Validating- and MutatingWebhookConfiguration
// that route requests to tenantguard: only the resources and operations the
// rules read, with the safety settings docs/webhook.md explains (fail closed
// for tenants, short timeout, kube-system, kube-node-lease and tenantguard's
// own namespace exempt, nodes and control-plane components exempt). The e2e
// tests and `make demo` install exactly these objects.
package configuration
