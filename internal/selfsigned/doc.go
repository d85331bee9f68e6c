// Package selfsigned issues a private CA and serving certificates signed by
// it, for local control planes, tests and `make demo`; the CA goes into the
// webhook configuration's caBundle.
package selfsigned
