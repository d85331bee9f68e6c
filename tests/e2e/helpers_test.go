package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/tests/live"
)

// dryRun sends a request through admission without persisting it.
var dryRun = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

// wantDenied fails unless err is tenantguard's denial naming rule.
func wantDenied(t *testing.T, err error, rule string) {
	t.Helper()
	if err == nil {
		t.Fatalf("allowed; want a [%s] denial", rule)
	}
	if !strings.Contains(err.Error(), "denied the request: ") || !strings.Contains(err.Error(), "["+rule+"] ") {
		t.Fatalf("got %v; want a [%s] denial from tenantguard", err, rule)
	}
}

// wantAllowed fails on any error.
func wantAllowed(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
}

// eventually retries f until it returns nil, for up to 10 s; the view
// follows the API server through a watch, a few milliseconds behind.
func eventually(t testing.TB, what string, f func(ctx context.Context) error) {
	t.Helper()
	within(t, 10*time.Second, what, f)
}

// within retries f until it returns nil, for up to limit.
func within(t testing.TB, limit time.Duration, what string, f func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var err error
	for time.Now().Before(deadline) {
		if err = f(context.WithoutCancel(t.Context())); err == nil { // also from a Cleanup
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: still %v after %v", what, err, limit)
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", ImagePullPolicy: corev1.PullAlways}}}
}

func pod(name string, mutate ...func(*corev1.PodSpec)) *corev1.Pod {
	spec := podSpec()
	for _, m := range mutate {
		m(&spec)
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func deployment(name string, mutate func(*corev1.PodSpec)) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	spec := podSpec()
	mutate(&spec)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

// metric returns the shared server's /metrics line starting with prefix, or "".
func metric(t *testing.T, prefix string) string {
	t.Helper()
	return metricAt(t, cluster, prefix)
}

// registryDoc is the document in c's registry ConfigMap.
func registryDoc(t testing.TB, c *live.Cluster) string {
	t.Helper()
	ctx := context.WithoutCancel(t.Context()) // also used from t.Cleanup
	cm, err := c.Client.CoreV1().ConfigMaps(live.Namespace).Get(ctx, live.RegistryName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data["tenants.yaml"]
}

// setRegistryDoc replaces the document in c's registry ConfigMap.
func setRegistryDoc(t testing.TB, c *live.Cluster, doc string) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	cm, err := c.Client.CoreV1().ConfigMaps(live.Namespace).Get(ctx, live.RegistryName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["tenants.yaml"] = doc
	if _, err := c.Client.CoreV1().ConfigMaps(live.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// servePolicyDir starts a control plane of its own with a server serving the
// policy directory dir, the webhooks routing what cat (nil: the embedded
// library) declares, and the namespace oil-dev of tenant oil. The server's
// logs are printed when the test fails; everything stops when it ends.
func servePolicyDir(t *testing.T, dir string, cat *catalog.Catalog, serveArgs ...string) *live.Cluster {
	t.Helper()
	return servePolicy(t, cat, append([]string{"--policy-dir", dir}, serveArgs...)...)
}

// servePolicy is servePolicyDir with the library given by serveArgs
// (--policy-dir, --policy-overlay).
func servePolicy(t *testing.T, cat *catalog.Catalog, serveArgs ...string) *live.Cluster {
	t.Helper()
	ctx := t.Context()
	args := append([]string{"--generator=false", "--webhook-tenant-label", tenantLabel}, serveArgs...)
	c, err := live.Start(ctx, live.Options{Catalog: cat, ServeArgs: args})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server logs:\n%s", c.Logs.String())
		}
	})
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, namespace("oil-dev", map[string]string{tenantLabel: "oil"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// behindBalancer starts replicas of the server on c with args, waits until
// each is ready and points c's webhooks at a balancer in front of them,
// until the test ends (a failed test prints each replica's logs).
func behindBalancer(t *testing.T, c *live.Cluster, replicas int, args ...string) {
	t.Helper()
	ctx := t.Context()
	urls := make([]string, replicas)
	for i := range urls {
		url, logs, stop, err := c.Replica(ctx, args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("replica %d logs:\n%s", i, logs.String())
			}
		})
		eventually(t, "replica ready", func(context.Context) error { return c.ReadyAt(url) })
		urls[i] = url
	}
	lb, stop, err := c.Balance(urls)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	before, err := c.PointWebhooks(ctx, lb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.PointWebhooks(context.WithoutCancel(ctx), before) })
}

// parallelCreates runs n creates at once, create(ctx, i) for i in [0, n),
// and counts those admitted and those refused by rule; any other error
// fails the test. elapsed is the burst's duration.
func parallelCreates(t *testing.T, n int, rule string, create func(ctx context.Context, i int) error) (admitted, refused int, elapsed time.Duration) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var other []error
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			err := create(t.Context(), i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				admitted++
			case strings.Contains(err.Error(), "["+rule+"]"):
				refused++
			default:
				other = append(other, err)
			}
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	elapsed = time.Since(began)
	for _, err := range other {
		t.Error(err)
	}
	return admitted, refused, elapsed
}
