// Package admission decodes AdmissionReview v1 requests and builds their
// responses. Decode is the only way a request enters tenantguard, from the
// review command or from the webhook's HTTP handler; respond.go holds every
// response helper.
package admission
