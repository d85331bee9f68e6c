package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/tenantguard/tenantguard/generator"
	"github.com/tenantguard/tenantguard/tests/live"
)

// The reports of the default format, and the one report name (the
// default instance's) in each namespace.
var (
	reportsGVR        = schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "reports"}
	clusterReportsGVR = schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "clusterreports"}
	reportName        = generator.DefaultInstance
)

// TestTheBackgroundAuditReportsWhatATighterRegistryRefusesAndPrunesWhatIsFixed
// runs a server of its own that audits every 2 seconds, with the report
// CRDs installed. A gas pod mounting /var/log is admitted while gas may do
// so read-only; the registry is tightened (no host paths, one namespace
// where gas has two): the report of the pod's namespace appears with the
// pod's host-path row, the cluster report with both namespaces'
// namespace-quota rows, and the gauge counts them; the pod deleted and
// the quota restored, both reports are pruned.
func TestTheBackgroundAuditReportsWhatATighterRegistryRefusesAndPrunesWhatIsFixed(t *testing.T) {
	ctx := t.Context()
	c, err := live.Start(ctx, live.Options{ReportCRDs: true, ServeArgs: []string{"--generator=false", "--audit-interval=2s"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server logs:\n%s", c.Logs.String())
		}
	})
	reports := dynamic.NewForConfigOrDie(c.Admin)
	gas := c.As("gina", "gas-team")
	for _, name := range []string{"gas-web", "gas-api"} {
		if _, err := gas.CoreV1().Namespaces().Create(ctx, namespace(name, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	logs := pod("logs", func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "log", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log/app"}}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "log", MountPath: "/var/log", ReadOnly: true}}
	})
	if _, err := gas.CoreV1().Pods("gas-web").Create(ctx, logs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("gas may mount /var/log read-only: %v", err)
	}
	// Audits that found nothing write nothing.
	within(t, 30*time.Second, "two clean audits", func(context.Context) error {
		if line := metricAt(t, c, "tenantguard_audit_objects "); line == "" || strings.HasSuffix(line, " 0") {
			return fmt.Errorf("no audit yet: %q", line)
		}
		return nil
	})
	wantNoReport(t, reports, reportsGVR, "gas-web")

	loose := registryDoc(t, c)
	tight := regexp.MustCompile(`(?m)^ *- \{pathPrefix: /var/log, readOnly: true\}\n`).ReplaceAllString(loose, "")
	tight = strings.Replace(tight, "allowedHostPaths:\n", "allowedHostPaths: []\n", 1)
	tight = strings.Replace(tight, "namespaceQuota: 2\n", "namespaceQuota: 1\n", 1) // gas's
	if strings.Contains(tight, "pathPrefix: /var/log") || !strings.Contains(tight, "namespaceQuota: 1\n") {
		t.Fatalf("the example registry changed: gas's host path grant and namespace quota are not where the test expects them:\n%s", loose)
	}
	setRegistryDoc(t, c, tight)

	within(t, 30*time.Second, "the report of gas-web with the pod's host-path row", func(ctx context.Context) error {
		r, err := reports.Resource(reportsGVR).Namespace("gas-web").Get(ctx, reportName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return hasRow(r, "host-path", "Pod", "logs", "fail")
	})
	within(t, 30*time.Second, "the cluster report with both gas namespaces' namespace-quota rows", func(ctx context.Context) error {
		r, err := reports.Resource(clusterReportsGVR).Get(ctx, reportName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := hasRow(r, "namespace-quota", "Namespace", "gas-web", "fail"); err != nil {
			return err
		}
		return hasRow(r, "namespace-quota", "Namespace", "gas-api", "fail")
	})
	within(t, 30*time.Second, "the violations gauge", func(context.Context) error {
		for rule, want := range map[string]string{"host-path": "1", "namespace-quota": "2"} {
			if line := metricAt(t, c, `tenantguard_audit_violations{rule="`+rule+`",tenant="gas"}`); !strings.HasSuffix(line, " "+want) {
				return fmt.Errorf("%s: %q, want %s", rule, line, want)
			}
		}
		return nil
	})

	// Fixed: the pod deleted (by an administrator: a tenant could too),
	// the quota given back.
	if err := c.Client.CoreV1().Pods("gas-web").Delete(ctx, "logs", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	setRegistryDoc(t, c, strings.Replace(tight, "namespaceQuota: 1\n", "namespaceQuota: 2\n", 1))
	within(t, 30*time.Second, "both reports pruned", func(ctx context.Context) error {
		if _, err := reports.Resource(reportsGVR).Namespace("gas-web").Get(ctx, reportName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("gas-web's report: %w", err)
		}
		if _, err := reports.Resource(clusterReportsGVR).Get(ctx, reportName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the cluster report: %w", err)
		}
		return nil
	})
}

// wantNoReport fails if namespace has the instance's report.
func wantNoReport(t *testing.T, client dynamic.Interface, gvr schema.GroupVersionResource, namespace string) {
	t.Helper()
	if _, err := client.Resource(gvr).Namespace(namespace).Get(t.Context(), reportName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a report in %s before any violation: %v", namespace, err)
	}
}

// hasRow is nil when the report has a result of rule about the object.
func hasRow(r *unstructured.Unstructured, rule, kind, name, result string) error {
	results, _, _ := unstructured.NestedSlice(r.Object, "results")
	for _, item := range results {
		res, _ := item.(map[string]any)
		resources, _ := res["resources"].([]any)
		if res["policy"] != rule || res["result"] != result || len(resources) != 1 {
			continue
		}
		if o, _ := resources[0].(map[string]any); o["kind"] == kind && o["name"] == name {
			return nil
		}
	}
	return fmt.Errorf("no %s %s row of %s %q in %v", result, rule, kind, name, results)
}
