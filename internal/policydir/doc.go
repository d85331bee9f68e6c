// Package policydir loads a directory of Rego that replaces tenantguard's
// embedded rules (--policy-dir) and follows it: every change is handed to the
// state store, which refuses a policy that does not compile or answer and
// keeps the last good one.
package policydir
