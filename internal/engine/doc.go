// Package engine evaluates admission requests against the Rego rule library
// with OPA embedded. The rules are compiled once (PrepareForEval) and the
// compiled registry lives in the OPA store, so each request only sends the
// request itself and the few cluster facts its rules read. As the API server
// does, the mutations are applied first and the decision is taken on the
// mutated object.
package engine
