// Package watch feeds the admission server from the API server through
// informers, never an API call per request: the registry ConfigMap into the
// state store (refusals become Events on the ConfigMap), and namespaces,
// PriorityClasses and the objects tenant quotas count into the cluster view.
// Counted objects are watched as metadata only and stripped to their
// identity, so 100,000 pods cost little memory; pods that have finished are
// not watched, as ResourceQuota does not count them.
package watch
