// Package memlimit sets the Go runtime's memory settings for the server.
// The soft memory limit is an explicit size or a share of the container's
// cgroup memory limit, so that the garbage collector works harder before
// the process nears what the kubelet would kill it at. The collector's
// target (GC percent) lets the heap grow to four times its live size
// between collections unless told otherwise: the limit, not the target,
// bounds the heap.
package memlimit
