package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/live"
)

// The tenant, owner and namespace BenchmarkCreateEndToEnd creates pods in.
const (
	e2eTenant    = "bench-e2e"
	e2eOwner     = "bench-e2e-owner"
	e2eNamespace = "bench-e2e-apps"
)

// e2eTenantDoc is the benchmark's tenant: oil's workload rules (registries,
// pull policy, PriorityClass, RuntimeClass, node pool, each with its
// defaults), and a pod count and resource quota too large to be reached,
// so that every pod it creates is admitted and every rule is evaluated.
var e2eTenantDoc = fmt.Sprintf(`
  - name: %s
    owners: [{kind: User, name: %s}]
    priorityClasses: {allowed: [tenant-low], default: tenant-low}
    images: {allowedRegistries: [registry.example], allowedPullPolicies: [Always]}
    runtimeClasses: {allowed: [gvisor], default: gvisor}
    nodePlacement:
      nodeSelector: {pool: bench}
      tolerations: [{key: pool, operator: Equal, value: bench, effect: NoSchedule}]
    quotas: {pods: 1000000}
    resourceQuota: {hard: {requests.cpu: "100000", requests.memory: 100000Gi}}
`, e2eTenant, e2eOwner)

// e2eSetup is one way of enforcing the library on the API server.
type e2eSetup struct {
	name string
	// webhook installs tenantguard's webhook configurations; validating and
	// mutating install the exported ValidatingAdmissionPolicies and
	// MutatingAdmissionPolicies.
	webhook, validating, mutating bool
}

// e2eSetups are the setups compared, each alone on the API server.
var e2eSetups = []e2eSetup{
	{name: "none"},
	{name: "tenantguard", webhook: true},
	{name: "vap", validating: true},
	{name: "vap+map", validating: true, mutating: true},
}

// e2ePods are the pods created: one naming everything the tenant's rules
// ask (as a GitOps-managed workload does), and one leaving the
// PriorityClass, RuntimeClass and node pool to the defaults (measured where
// a setup sets them, and with no policy, which stores it without them).
var e2ePods = []struct {
	name     string
	complete bool
}{{"complete", true}, {"defaulted", false}}

// BenchmarkCreateEndToEnd measures what a tenant's pod create waits for on
// the real API server, client-side (impersonated, one request at a time, no
// client rate limit), under each setup alone: no policy, tenantguard's
// webhooks (the server of TestMain), the exported ValidatingAdmissionPolicies,
// and those with the exported MutatingAdmissionPolicies for the defaults.
// Besides the mean (ns/op) it reports the p50 and p99 of the creates, and the
// API server's own admission time per create (its
// apiserver_admission_step_admission_duration_seconds, mutating and
// validating steps summed). Every create is admitted; the pods stay. Run it
// alone, with a fixed count, as make bench does: go test -run '^$' -bench
// CreateEndToEnd -benchtime 500x -count 3 ./tests/e2e/
func BenchmarkCreateEndToEnd(b *testing.B) {
	e := newEndToEnd(b)
	for _, shape := range e2ePods {
		for _, setup := range e2eSetups {
			if !shape.complete && setup.validating && !setup.mutating {
				continue // the validating policies alone set no default: the pod would be stored without them
			}
			b.Run(fmt.Sprintf("pod=%s/setup=%s", shape.name, setup.name), func(b *testing.B) {
				e.use(b, setup)
				before := e.admissionSeconds(b)
				took := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := range b.N {
					start := time.Now()
					if _, err := e.tenant.CoreV1().Pods(e2eNamespace).Create(b.Context(), e2ePod(e.next(), shape.complete), metav1.CreateOptions{}); err != nil {
						b.Fatalf("create %d under %s: %v", i, setup.name, err)
					}
					took = append(took, time.Since(start))
				}
				b.StopTimer()
				admission := e.admissionSeconds(b) - before
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(admission*1e6/float64(b.N), "admission-µs/op")
			})
		}
	}
}

// endToEnd holds the benchmark's clients and the objects of each setup.
type endToEnd struct {
	admin   kubernetes.Interface
	dynamic dynamic.Interface
	tenant  kubernetes.Interface
	// webhooks are TestMain's configurations, put back when the benchmark ends.
	validating *admissionregistrationv1.ValidatingWebhookConfiguration
	mutating   *admissionregistrationv1.MutatingWebhookConfiguration
	// library is the VAP export of the registry with the benchmark's tenant.
	library *export.Library
	count   int
}

// newEndToEnd adds the benchmark's tenant to the registry and creates its
// namespace, exports the library, keeps the webhook configurations to put
// them back, and installs the parameters the policies read.
func newEndToEnd(b *testing.B) *endToEnd {
	ctx := b.Context()
	cfg := rest.CopyConfig(cluster.Admin)
	cfg.QPS = -1 // no client-side rate limit: the API server's latency only
	e := &endToEnd{admin: kubernetes.NewForConfigOrDie(cfg), dynamic: dynamic.NewForConfigOrDie(cfg)}
	tenantCfg := rest.CopyConfig(cfg)
	tenantCfg.Impersonate = rest.ImpersonationConfig{UserName: e2eOwner, Groups: []string{live.TenantsGroup, "system:authenticated"}}
	e.tenant = kubernetes.NewForConfigOrDie(tenantCfg)

	doc := registryDoc(b, cluster)
	if !strings.Contains(doc, "name: "+e2eTenant+"\n") {
		doc += e2eTenantDoc
		setRegistryDoc(b, cluster, doc)
	}
	snap, err := registry.Parse("registry", []byte(doc))
	if err != nil {
		b.Fatal(err)
	}
	if e.library, err = export.VAP(snap, export.Options{}); err != nil {
		b.Fatal(err)
	}
	adm := e.admin.AdmissionregistrationV1()
	if e.validating, err = adm.ValidatingWebhookConfigurations().Get(ctx, "tenantguard", metav1.GetOptions{}); err != nil {
		b.Fatal(err)
	}
	if e.mutating, err = adm.MutatingWebhookConfigurations().Get(ctx, "tenantguard", metav1.GetOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.use(b, e2eSetup{webhook: true}) })
	// the registry reload: the owner may create the namespace once tenantguard knows the tenant
	eventually(b, "the benchmark's namespace", func(ctx context.Context) error {
		_, err := e.tenant.CoreV1().Namespaces().Create(ctx, namespace(e2eNamespace, map[string]string{tenantLabel: e2eTenant}), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	var crd, params []map[string]any
	for _, obj := range e.library.Objects {
		switch obj["kind"] {
		case "CustomResourceDefinition":
			crd = append(crd, obj)
		case export.ParamsKind:
			params = append(params, obj)
		}
	}
	e.apply(b, crd)
	eventually(b, "the parameter kind to be served", func(context.Context) error {
		_, err := cluster.Resource(schema.GroupVersionKind{Group: export.ParamsGroup, Version: export.ParamsVersion, Kind: export.ParamsKind})
		return err
	})
	e.apply(b, params)
	return e
}

// next is a fresh pod name.
func (e *endToEnd) next() string {
	e.count++
	return fmt.Sprintf("p-%d-%d", time.Now().UnixNano()%1e6, e.count)
}

// e2ePod is the benchmark's pod: complete names what the rules ask for,
// else the defaults are left to admission.
func e2ePod(name string, complete bool) *corev1.Pod {
	p := pod(name, func(s *corev1.PodSpec) {
		s.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	})
	if complete {
		p.Spec.PriorityClassName = "tenant-low"
		p.Spec.RuntimeClassName = new("gvisor")
		p.Spec.NodeSelector = map[string]string{"pool": "bench"}
		p.Spec.Tolerations = []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "bench", Effect: corev1.TaintEffectNoSchedule}}
	}
	return p
}

// use puts the setup alone on the API server and waits until the API server
// enforces it: a pod from a registry the tenant may not use is refused by
// tenantguard's webhook or by a policy, and a pod leaving its RuntimeClass
// to admission gets the tenant's default or not.
func (e *endToEnd) use(b *testing.B, s e2eSetup) {
	ctx := context.WithoutCancel(b.Context()) // also from b.Cleanup
	adm := e.admin.AdmissionregistrationV1()
	if s.webhook {
		for _, err := range []error{
			ignoreExists(adm.ValidatingWebhookConfigurations().Create(ctx, fresh(e.validating), metav1.CreateOptions{})),
			ignoreExists(adm.MutatingWebhookConfigurations().Create(ctx, fresh(e.mutating), metav1.CreateOptions{})),
		} {
			if err != nil {
				b.Fatal(err)
			}
		}
	} else {
		for _, err := range []error{
			adm.ValidatingWebhookConfigurations().Delete(ctx, e.validating.Name, metav1.DeleteOptions{}),
			adm.MutatingWebhookConfigurations().Delete(ctx, e.mutating.Name, metav1.DeleteOptions{}),
		} {
			if err != nil && !apierrors.IsNotFound(err) {
				b.Fatal(err)
			}
		}
	}
	var install, remove []map[string]any
	for _, obj := range e.library.Objects {
		kind, _ := obj["kind"].(string)
		switch {
		case strings.HasPrefix(kind, "ValidatingAdmissionPolicy") && s.validating,
			strings.HasPrefix(kind, "MutatingAdmissionPolicy") && s.mutating:
			install = append(install, obj)
		case strings.HasPrefix(kind, "ValidatingAdmissionPolicy"), strings.HasPrefix(kind, "MutatingAdmissionPolicy"):
			remove = append(remove, obj)
		}
	}
	e.apply(b, install)
	for _, o := range remove {
		obj := unstructured.Unstructured{Object: o}
		gvr, err := cluster.Resource(obj.GroupVersionKind())
		if err != nil {
			b.Fatal(err)
		}
		if err := e.dynamic.Resource(gvr).Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			b.Fatal(err)
		}
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	eventually(b, "the setup "+s.name+" to be in force", func(ctx context.Context) error {
		foreign := e2ePod("probe-registry", true)
		foreign.Spec.Containers[0].Image = "docker.io/library/busybox"
		_, err := e.tenant.CoreV1().Pods(e2eNamespace).Create(ctx, foreign, dryRun)
		refusedBy := "nobody"
		switch {
		case err != nil && strings.Contains(err.Error(), "admission webhook"):
			refusedBy = "webhook"
		case err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"):
			refusedBy = "policy"
		case err != nil:
			return err
		}
		defaulted, err := e.tenant.CoreV1().Pods(e2eNamespace).Create(ctx, e2ePod("probe-defaults", false), dryRun)
		gotDefault := err == nil && defaulted.Spec.RuntimeClassName != nil
		want := "nobody"
		switch {
		case s.webhook:
			want = "webhook"
		case s.validating:
			want = "policy"
		}
		if refusedBy != want || gotDefault != (s.webhook || s.mutating) {
			return fmt.Errorf("a foreign image refused by %s (want %s), a default set: %v", refusedBy, want, gotDefault)
		}
		return nil
	})
	// policies, bindings and parameters come through separate informers
	time.Sleep(time.Second)
}

// apply applies objects with server-side apply as the administrator.
func (e *endToEnd) apply(b *testing.B, objects []map[string]any) {
	if _, err := cluster.ApplyObjects(context.WithoutCancel(b.Context()), objects, metav1.PatchOptions{FieldManager: "bench", Force: new(true)}); err != nil {
		b.Fatal(err)
	}
}

// admissionSeconds is the API server's admission time for creates so far:
// the sum of its mutating and validating admission steps, every outcome.
func (e *endToEnd) admissionSeconds(b *testing.B) float64 {
	raw, err := e.admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.WithoutCancel(b.Context()))
	if err != nil {
		b.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		b.Fatal(err)
	}
	family, ok := families["apiserver_admission_step_admission_duration_seconds"]
	if !ok {
		b.Fatal("the API server reports no apiserver_admission_step_admission_duration_seconds")
	}
	var sum float64
	for _, m := range family.GetMetric() {
		if labelValue(m, "operation") == "CREATE" {
			sum += m.GetHistogram().GetSampleSum()
		}
	}
	return sum
}

// labelValue is a metric's value of a label.
func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// fresh is a configuration to create again: its identity and status dropped.
func fresh[T interface{ metav1.Object }](obj T) T {
	obj.SetResourceVersion("")
	obj.SetUID("")
	obj.SetCreationTimestamp(metav1.Time{})
	obj.SetManagedFields(nil)
	obj.SetGeneration(0)
	return obj
}

// ignoreExists is the error of a create, nil when the object exists.
func ignoreExists[T any](_ T, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
