// Package usage computes what an object adds to a tenant-wide resource
// quota (registry field resourceQuota.hard), as the API server's quota
// evaluators compute it for a namespace's ResourceQuota: a pod's compute
// requests and limits (the larger of its init containers and the sum of
// its containers, native sidecars counted with the containers, pod-level
// resources and overhead, through Kubernetes' own component-helpers), a
// claim's storage in total and per StorageClass; and which requests a pod
// must name for a quota to count it at all.
//
// Usage is keyed by ResourceQuota resource names (requests.cpu,
// limits.memory, requests.nvidia.com/gpu,
// standard.storageclass.storage.k8s.io/requests.storage), the keys the
// registry's resourceQuota.hard takes; CheckKey says which those are.
package usage
