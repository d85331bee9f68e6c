package scale

import "fmt"

// Request is one AdmissionReview of the mixed corpus, as the API server
// sends it to the validating webhook (after the mutating one), and the
// answer every correct engine gives.
type Request struct {
	// Kind names the shape of the request ("pod", "deployment", ...).
	Kind string
	// UID is the request's uid, which the answer must repeat.
	UID string
	// Body is the AdmissionReview.
	Body []byte
	// Allowed is the expected answer.
	Allowed bool
	// Counted says the decision needs a tenant-wide count under the scale
	// registry (Registry): the request creates a namespace (namespaceQuota)
	// or an object of a resource its tenant has a quota for (pods,
	// persistentvolumeclaims). An engine that counts by reading the cluster,
	// as the OPA bundle does, pays for these; the others need only the
	// request's own namespace.
	Counted bool
}

// shape is one kind of request of the mixed corpus: how many of every
// corpusShare requests it makes, and its body for tenant i.
type shape struct {
	kind    string
	share   int
	allowed bool
	counted bool
	body    func(uid string, tenant int) []byte
}

// The mixed corpus, per 20 requests: 7 pods, 4 Deployments, 2 claims, 2
// Services, 2 namespace creates (refused: every tenant's 10 namespaces
// exist), 2 pods asking for a host path and 1 pulling from a registry its
// tenant does not allow (refused). The Deployments and Services (6 of 20)
// need no tenant-wide count; the others do (Request.Counted).
var shapes = []shape{
	{"pod", 7, true, true, func(uid string, i int) []byte {
		return review(uid, i, "Pod", "pods", fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"t%d-ns%d","labels":{"app":"web"}},"spec":%s}`, i, corpusNamespace, mutatedPodSpec(i, "nginx")))
	}},
	{"deployment", 4, true, false, func(uid string, i int) []byte { return deploymentIn(uid, i, corpusNamespace) }},
	{"persistentvolumeclaim", 2, true, true, func(uid string, i int) []byte {
		return review(uid, i, "PersistentVolumeClaim", "persistentvolumeclaims", fmt.Sprintf(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"t%d-ns%d"},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"standard","resources":{"requests":{"storage":"1Gi"}}}}`, i, corpusNamespace))
	}},
	{"service", 2, true, false, func(uid string, i int) []byte {
		return review(uid, i, "Service", "services", fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"t%d-ns%d"},"spec":{"type":"ClusterIP","selector":{"app":"web"},"ports":[{"port":80}]}}`, i, corpusNamespace))
	}},
	{"namespace", 2, false, true, func(uid string, i int) []byte {
		return fmt.Appendf(nil, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":%[1]q,"kind":{"group":"","version":"v1","kind":"Namespace"},"resource":{"group":"","version":"v1","resource":"namespaces"},"name":"t%[2]d-extra","operation":"CREATE","userInfo":{"username":"u%[2]d","groups":["g%[2]d","system:authenticated"]},"object":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"t%[2]d-extra","labels":{"tenantguard.io/tenant":"t%[2]d"}}}}}`, uid, i)
	}},
	{"pod-image", 1, false, true, func(uid string, i int) []byte {
		return review(uid, i, "Pod", "pods", fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"miner","namespace":"t%d-ns%d"},"spec":%s}`, i, corpusNamespace, mutatedPodSpec(i, "quay.io/evil/miner:1")))
	}},
	{"pod-hostpath", 2, false, true, func(uid string, i int) []byte {
		return review(uid, i, "Pod", "pods", fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"debug","namespace":"t%d-ns%d"},"spec":{"priorityClassName":"tenant-low","containers":[{"name":"sh","image":"busybox","volumeMounts":[{"name":"root","mountPath":"/host"}]}],"volumes":[{"name":"root","hostPath":{"path":"/"}}]}}`, i, corpusNamespace))
	}},
}

// mutatedPodSpec is a pod spec of tenant i running image as the API server
// and the mutating webhook leave it: with the pull policy defaulted and the
// tenant's default PriorityClass, RuntimeClass and node pool.
func mutatedPodSpec(i int, image string) string {
	// in the order of the API server's fields, as it sends them
	return fmt.Sprintf(`{"volumes":[{"name":"tmp","emptyDir":{}}],"containers":[{"name":"web","image":%[2]q,"ports":[{"containerPort":80}],"resources":%[3]s,"imagePullPolicy":"Always"}],"nodeSelector":{"pool":"t%[1]d"},"tolerations":[{"key":"pool","operator":"Equal","value":"t%[1]d","effect":"NoSchedule"}],"priorityClassName":"tenant-low","runtimeClassName":"gvisor"}`, i, image, PodResources)
}

// corpusNamespace is the namespace of tenant i, t<i>-ns<corpusNamespace>,
// that the corpus's namespaced requests go to.
const corpusNamespace = 3

// review wraps a namespaced object of the core API group (v1) created by
// tenant i's owner in the corpus's namespace into an AdmissionReview.
func review(uid string, i int, kind, resource, object string) []byte {
	return reviewIn(uid, i, corpusNamespace, "", kind, resource, object)
}

// reviewIn is review in namespace t<i>-ns<j>, for an object of the API
// group given (API version v1 of it).
func reviewIn(uid string, i, j int, group, kind, resource, object string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":%[1]q,"kind":{"group":%[2]q,"version":"v1","kind":%[3]q},"resource":{"group":%[2]q,"version":"v1","resource":%[4]q},"namespace":"t%[5]d-ns%[7]d","operation":"CREATE","userInfo":{"username":"u%[5]d","groups":["g%[5]d","system:authenticated"]},"object":%[6]s}}`, uid, group, kind, resource, i, object, j)
}

// deploymentIn is the corpus's Deployment of tenant i, admitted, in
// namespace t<i>-ns<j>.
func deploymentIn(uid string, i, j int) []byte {
	return reviewIn(uid, i, j, "apps", "Deployment", "deployments", fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"t%d-ns%d"},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":%s}}}`, i, j, mutatedPodSpec(i, "registry.example.com/web:1.4")))
}

// EveryNamespace is the corpus's Deployment, admitted, once in each
// namespace of the scale cluster (Fill's, of tenants tenants and namespaces
// namespaces each). The corpus's requests all go to each tenant's
// corpusNamespace; sent once before a run, these have the server decide in
// every namespace, as one that has served a while has, so that what it
// keeps per namespace it has decided in is in what the run measures. A Deployment counts
// against no quota, so they leave no reservation behind.
func EveryNamespace(tenants, namespaces int) []Request {
	out := make([]Request, 0, tenants*namespaces)
	for i := range tenants {
		for j := range namespaces {
			uid := fmt.Sprintf("every-%d-%d", i, j)
			out = append(out, Request{Kind: "deployment", UID: uid, Body: deploymentIn(uid, i, j), Allowed: true})
		}
	}
	return out
}

// Corpus is n requests of the mixed corpus, spread over the registry's
// tenants in turn; the same arguments give the same corpus.
func Corpus(tenants, n int) []Request {
	var cycle []shape
	for _, s := range shapes {
		for range s.share {
			cycle = append(cycle, s)
		}
	}
	out := make([]Request, n)
	for k := range out {
		s := cycle[k%len(cycle)]
		tenant := (k * 7919) % tenants
		uid := fmt.Sprintf("req-%d", k)
		out[k] = Request{Kind: s.kind, UID: uid, Body: s.body(uid, tenant), Allowed: s.allowed, Counted: s.counted}
	}
	return out
}

// Split parts a corpus into the requests that need no tenant-wide count
// and those that need one (Request.Counted), each in the corpus's order.
func Split(corpus []Request) (uncounted, counted []Request) {
	for _, r := range corpus {
		if r.Counted {
			counted = append(counted, r)
		} else {
			uncounted = append(uncounted, r)
		}
	}
	return uncounted, counted
}
