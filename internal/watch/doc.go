// Package watch feeds the admission server from the API server through the
// informers of the manager's cache (package informers), never an API call
// per request: the registry ConfigMap into the state store (refusals become
// Events on the ConfigMap), and namespaces, PriorityClasses and the objects
// tenant quotas count into the cluster view. Namespaces and counted objects
// are cached as metadata only and stripped to what is read (a counted
// object to its identity), so 100,000 pods cost little memory; pods that
// have finished are not listed, as ResourceQuota does not count them. The
// informer of a counted resource is added to the running cache when a
// registry first counts it, and the registry waits for it to sync.
// Ingresses and the Gateway API's HTTPRoutes, GRPCRoutes, TLSRoutes,
// ListenerSets and XListenerSets feed the view's host index, watched unstructured and slimmed
// to their identity and hosts (a servedObject, about 410 bytes each in the
// cache); a Gateway API kind whose CRD is not installed is looked up again every ResolveInterval,
// and readiness waits for every one watched.
package watch
