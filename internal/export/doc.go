// Package export turns the rule library and a tenant registry into policy
// for other engines. Bundle builds the OPA bundle: every Rego module of the
// library (tests included, so that `opa test` runs on it), the registry as
// data, a .manifest with roots, revision and Rego version, and optionally a
// signature that `opa run --verification-key` checks.
package export
