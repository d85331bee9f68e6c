// Package policydir loads a directory that replaces tenantguard's embedded
// rule library (--policy-dir) and follows it: every change is read as a
// catalog (Rego, tests, CEL, the rules' declarations) and handed to the
// state store, which refuses a policy that does not load, compile, pass its
// own tests on the evaluator that will serve it, or answer, and keeps the
// last good one.
package policydir
