// Package memlimit sets the Go runtime's soft memory limit for the server:
// an explicit size, or a share of the container's cgroup memory limit, so
// that the garbage collector works harder before the process nears what
// the kubelet would kill it at, instead of letting the heap grow to twice
// its live size between collections.
package memlimit
