// Package selfsigned issues a private CA and serving certificates signed by
// it: for the built-in certificate rotation (webhook/certrotate), local
// control planes, tests and `make demo`. The CA goes into the webhook
// configurations' caBundle.
package selfsigned
