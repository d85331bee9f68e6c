// Package admission is tenantguard's AdmissionReview v1 codec: Decode is the
// only way a request enters tenantguard, from the review command or from the
// webhook's HTTP handler, and respond.go builds and writes every answer (the
// decision's response, the fail-closed [internal] refusal, plain-text errors),
// which encode.go encodes.
package admission
