package load

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tenantguard/tenantguard/internal/registry"
)

// auditCluster is the API server of the scale cluster, as the background
// audit sees it: it answers the audit's list requests page by page, limit
// and continue, with the objects of scale.Objects as the API server stores
// them (every Namespace, Pod, Ingress and HTTPRoute, with the metadata and
// status the API server and the controllers add), as the JSON text of a
// list (auditloop.Pager), which the audit decodes as it decodes the API
// server's answer. The pages are written in this process, which the API
// server's encoding is not; the text is not sent through a socket. The pod
// p0 of each tenant's namespace ns0 pulls its image from a registry its
// tenant does not allow: the audit finds one image-registry violation per
// tenant, and writes a report for each of those namespaces.
//
// Its gate holds the audit at its next list request (or report write)
// while paused, so that the null webhook's turns are not shared with an
// audit; the time an audit was held is left out of its duration.
type auditCluster struct {
	client.Reader // Get: never called by the audit
	scale         Scale
	gate          gate
	// listed counts the objects served.
	listed atomic.Int64
}

// The kinds the audit cluster serves.
var (
	auditNamespaces = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	auditPods       = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	auditIngresses  = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}
	auditRoutes     = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}
)

// mapper is the REST mapping of the served kinds: the audit finds no other
// resource it checks (they are "not served by this cluster").
func (c *auditCluster) mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(auditNamespaces, meta.RESTScopeRoot)
	for _, gvk := range []schema.GroupVersionKind{auditPods, auditIngresses, auditRoutes} {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	return m
}

// perNamespace is how many objects of a list kind each namespace holds,
// and false for a kind the cluster does not hold.
func (c *auditCluster) perNamespace(listKind string) (int, bool) {
	switch listKind {
	case "NamespaceList", "IngressList", "HTTPRouteList":
		return 1, true
	case "PodList":
		return c.scale.Pods, true
	}
	return 0, false
}

// List answers the prune's list of reports: none is kept (the writer
// discards them).
func (c *auditCluster) List(ctx context.Context, _ client.ObjectList, _ ...client.ListOption) error {
	return c.gate.pass(ctx)
}

// listKinds are the list kinds of the served resources.
var listKinds = map[string]string{"namespaces": "NamespaceList", "pods": "PodList", "ingresses": "IngressList", "httproutes": "HTTPRouteList"}

// Page answers a list request (auditloop.Pager): a page of objects of the
// served resources, an empty list of the others.
func (c *auditCluster) Page(ctx context.Context, gvr schema.GroupVersionResource, limit int64, token string) ([]byte, error) {
	if err := c.gate.pass(ctx); err != nil {
		return nil, err
	}
	listKind := listKinds[gvr.Resource]
	per, ok := c.perNamespace(listKind)
	if !ok {
		return []byte(`{"metadata":{},"items":[]}`), nil
	}
	namespaces := c.scale.Tenants * c.scale.Namespaces
	total := namespaces * per
	start := 0
	if token != "" {
		var err error
		if start, err = strconv.Atoi(token); err != nil {
			return nil, fmt.Errorf("bad continue token %q", token)
		}
	}
	end := total
	if limit > 0 {
		end = min(start+int(limit), total)
	}
	next := ""
	if end < total {
		next = strconv.Itoa(end)
	}
	c.listed.Add(int64(end - start))
	return c.page(gvr.GroupVersion().String(), listKind, per, start, end, next), nil
}

// page is the JSON of the list of objects start to end of a kind.
func (c *auditCluster) page(apiVersion, listKind string, per, start, end int, next string) []byte {
	b := make([]byte, 0, (end-start)*3000+256)
	b = fmt.Appendf(b, `{"apiVersion":%q,"kind":%q,"metadata":{"resourceVersion":"4711","continue":%q},"items":[`, apiVersion, listKind, next)
	for n := start; n < end; n++ {
		if n > start {
			b = append(b, ',')
		}
		ns := n / per
		tenant, j, k := ns/c.scale.Namespaces, ns%c.scale.Namespaces, n%per
		switch listKind {
		case "NamespaceList":
			b = namespaceJSON(b, tenant, j)
		case "PodList":
			b = podJSON(b, tenant, j, k)
		case "IngressList":
			b = ingressJSON(b, tenant, j)
		case "HTTPRouteList":
			b = routeJSON(b, tenant, j)
		}
	}
	return append(b, "]}"...)
}

// created is the creation time of every object.
const created = "2026-11-01T08:00:00Z"

func namespaceJSON(b []byte, tenant, j int) []byte {
	return fmt.Appendf(b, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"t%[1]d-ns%[2]d","uid":"ns-%[1]d-%[2]d","resourceVersion":"%[3]d","creationTimestamp":%[4]q,`+
		`"labels":{%[5]q:"t%[1]d","kubernetes.io/metadata.name":"t%[1]d-ns%[2]d"},"managedFields":[{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"v1","time":%[4]q,"fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/metadata.name":{},%[6]q:{}}}}}]},`+
		`"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}`,
		tenant, j, 1000+tenant*10+j, created, registry.DefaultTenantLabel, "f:"+registry.DefaultTenantLabel)
}

// podJSON is a pod as a Deployment's ReplicaSet has it created and the
// kubelet runs it, tenantguard's defaults applied: p0 of each tenant's ns0
// pulls from quay.io, which no tenant may.
func podJSON(b []byte, tenant, j, k int) []byte {
	image := "registry.example.com/shop/web:1.4.2"
	if j == 0 && k == 0 {
		image = "quay.io/shop/web:1.4.2"
	}
	return fmt.Appendf(b, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p%[3]d","namespace":"t%[1]d-ns%[2]d","uid":"pod-%[1]d-%[2]d-%[3]d","resourceVersion":"%[4]d","creationTimestamp":%[5]q,`+
		`"generateName":"web-7d9c5b6f4-","labels":{"app":"web","pod-template-hash":"7d9c5b6f4"},`+
		`"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d9c5b6f4","uid":"rs-%[1]d-%[2]d","controller":true,"blockOwnerDeletion":true}],`+
		`"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":%[5]q,"fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"rs-%[1]d-%[2]d\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{},"f:resources":{}}}}}},`+
		`{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":%[5]q,"fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:startTime":{}}},"subresource":"status"}]},`+
		`"spec":{"containers":[{"name":"web","image":%[6]q,"imagePullPolicy":"Always","ports":[{"containerPort":8080,"protocol":"TCP"}],`+
		`"resources":{"limits":{"cpu":"500m","memory":"512Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File",`+
		`"volumeMounts":[{"name":"kube-api-access","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","readOnly":true}]}],`+
		`"volumes":[{"name":"kube-api-access","projected":{"defaultMode":420,"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}}]}}],`+
		`"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default",`+
		`"securityContext":{},"schedulerName":"default-scheduler","priorityClassName":"tenant-low","priority":1000,"runtimeClassName":"gvisor","enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority",`+
		`"nodeSelector":{"pool":"t%[1]d"},"tolerations":[{"key":"pool","operator":"Equal","value":"t%[1]d","effect":"NoSchedule"},{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}]},`+
		`"status":{"phase":"Running","conditions":[{"type":"Initialized","status":"True","lastTransitionTime":%[5]q},{"type":"Ready","status":"True","lastTransitionTime":%[5]q},{"type":"ContainersReady","status":"True","lastTransitionTime":%[5]q},{"type":"PodScheduled","status":"True","lastTransitionTime":%[5]q}],`+
		`"hostIP":"10.0.%[7]d.%[8]d","podIP":"10.244.%[7]d.%[8]d","podIPs":[{"ip":"10.244.%[7]d.%[8]d"}],"startTime":%[5]q,"qosClass":"Burstable",`+
		`"containerStatuses":[{"name":"web","ready":true,"started":true,"restartCount":0,"image":%[6]q,"imageID":"registry.example.com/shop/web@sha256:6b1d5a7c0f0e9e1b2a3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192","containerID":"containerd://%[3]d%[1]d%[2]d","state":{"running":{"startedAt":%[5]q}}}]}}`,
		tenant, j, k, 100000+k, created, image, (tenant*10+j)%250, k%250)
}

func ingressJSON(b []byte, tenant, j int) []byte {
	return fmt.Appendf(b, `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"web","namespace":"t%[1]d-ns%[2]d","uid":"ing-%[1]d-%[2]d","resourceVersion":"2000","creationTimestamp":%[3]q,"generation":1},`+
		`"spec":{"rules":[{"host":"web.ns%[2]d.t%[1]d.example.com","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"web","port":{"number":80}}}}]}}]},"status":{"loadBalancer":{}}}`,
		tenant, j, created)
}

func routeJSON(b []byte, tenant, j int) []byte {
	return fmt.Appendf(b, `{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"api","namespace":"t%[1]d-ns%[2]d","uid":"route-%[1]d-%[2]d","resourceVersion":"2001","creationTimestamp":%[3]q,"generation":1},`+
		`"spec":{"hostnames":["api.ns%[2]d.t%[1]d.example.com"],"rules":[{"backendRefs":[{"name":"api","port":8080}]}]}}`,
		tenant, j, created)
}

// reportSink is the writer of the audit's reports: it encodes each, as the
// client does to send it, counts it, and keeps none.
type reportSink struct {
	client.Client
	gate            *gate
	applied, pruned atomic.Int64
	bytes           atomic.Int64
}

// Apply encodes and counts a report.
func (s *reportSink) Apply(ctx context.Context, obj runtime.ApplyConfiguration, _ ...client.ApplyOption) error {
	if err := s.gate.pass(ctx); err != nil {
		return err
	}
	u, ok := obj.(interface{ MarshalJSON() ([]byte, error) })
	if !ok {
		return fmt.Errorf("cannot encode a %T", obj)
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	s.bytes.Add(int64(len(data)))
	s.applied.Add(1)
	return nil
}

// Delete counts a pruned report.
func (s *reportSink) Delete(ctx context.Context, _ client.Object, _ ...client.DeleteOption) error {
	if err := s.gate.pass(ctx); err != nil {
		return err
	}
	s.pruned.Add(1)
	return nil
}

// gate holds the audit while paused and tells when it is held; the total
// time it held it is Held.
type gate struct {
	mu     sync.Mutex
	paused bool
	open   chan struct{} // closed when resumed
	// waiting is signalled when the audit starts waiting at the gate.
	waiting chan struct{}
	held    atomic.Int64
	blocked bool
}

// newGate is a gate, paused.
func newGate() *gate {
	return &gate{paused: true, open: make(chan struct{}), waiting: make(chan struct{}, 1)}
}

// pass returns at once when the gate is open, else when it opens or ctx
// ends.
func (g *gate) pass(ctx context.Context) error {
	g.mu.Lock()
	if !g.paused {
		g.mu.Unlock()
		return nil
	}
	open := g.open
	g.blocked = true
	select {
	case g.waiting <- struct{}{}:
	default:
	}
	g.mu.Unlock()
	t := time.Now()
	defer func() {
		g.held.Add(int64(time.Since(t)))
		g.mu.Lock()
		g.blocked = false
		g.mu.Unlock()
	}()
	select {
	case <-open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pause closes the gate and waits until the audit is held at it, or for at
// most limit.
func (g *gate) pause(limit time.Duration) bool {
	g.mu.Lock()
	if !g.paused {
		g.paused, g.open = true, make(chan struct{})
		select { // a signal of an earlier pause
		case <-g.waiting:
		default:
		}
	}
	blocked := g.blocked
	g.mu.Unlock()
	if blocked {
		return true
	}
	select {
	case <-g.waiting:
		return true
	case <-time.After(limit):
		return false
	}
}

// resume opens the gate.
func (g *gate) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused {
		g.paused = false
		close(g.open)
	}
}

// Held is the total time the gate held the audit.
func (g *gate) Held() time.Duration { return time.Duration(g.held.Load()) }
