// Package certrotate is the server's built-in TLS mode: the replicas keep a
// private CA and the serving certificate in one Secret, renew both before
// they expire, keep the CA bundle of the webhook configurations current, and
// serve the certificate from memory, so that no certificate step is manual
// and no renewal needs a restart.
//
// Planned renewals never leave the API server holding a bundle that does not
// trust a certificate some replica serves: a new CA is added to the bundle a
// sixth of the CA's lifetime before it starts signing (never in the same
// check), the bundle written keeps the unexpired CAs already there, expired
// CAs leave it only once nothing they signed can still be valid, and a
// replica puts a new serving certificate in use only after it has written
// the bundle that trusts it. docs/webhook.md lists the windows that remain
// outside planned renewals.
package certrotate
