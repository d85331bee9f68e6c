// Package hostname says when two hosts that Ingresses and Gateway API routes
// serve collide: the same name, or a wildcard and a name it covers. The
// view's index of hosts (clusterview) and the strict ledger of hosts that
// replicas share (quota) both read it, so that a collision one of them
// finds the other finds too.
package hostname
