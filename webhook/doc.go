// Package webhook is tenantguard's HTTPS admission server: /validate and
// /mutate answer AdmissionReview v1, /healthz and /readyz are the probes and
// /metrics is Prometheus. The HTTP layer decodes (400 on bad input, package
// admission), the engine in the state store decides, and package admission
// builds and writes the answer. The serving certificate is reloaded from its
// files when they change (controller-runtime's certwatcher).
//
// Everything on the wire lives under webhook/: the AdmissionReview codec and
// every response (admission), the webhook configurations (configuration) and
// the certificates (certrotate, selfsigned).
package webhook
