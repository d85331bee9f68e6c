package e2e

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/tenantguard/tenantguard/generator"
	"github.com/tenantguard/tenantguard/internal/reports"
	"github.com/tenantguard/tenantguard/tests/live"
)

// reportName is the one report name (the default instance's) in each
// namespace.
var reportName = generator.DefaultInstance

// TestTheBackgroundAuditReportsWhatATighterRegistryRefusesAndPrunesWhatIsFixed
// runs, for each report format, a server of its own that audits every 2
// seconds, with the report CRDs installed. Two gas pods mounting /var/log
// are admitted while gas may do so read-only; the registry is tightened (no
// host paths, one namespace where gas has two): the report of the pods'
// namespace appears with both pods' host-path rows, the cluster report with
// both namespaces' namespace-quota rows, and the gauge counts them; one pod
// deleted, its row goes and the report stays; the other deleted and the
// quota restored, both reports are pruned. Audits that find the same
// violations leave the reports as they are.
func TestTheBackgroundAuditReportsWhatATighterRegistryRefusesAndPrunesWhatIsFixed(t *testing.T) {
	for _, format := range reports.Formats {
		t.Run(format.Name, func(t *testing.T) { auditAndPrune(t, format) })
	}
}

func auditAndPrune(t *testing.T, format reports.Format) {
	ctx := t.Context()
	c, err := live.Start(ctx, live.Options{ReportCRDs: true, ReportFormat: format.Name, ServeArgs: []string{"--audit-interval=2s"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server logs:\n%s", c.Logs.String())
		}
	})
	client := dynamic.NewForConfigOrDie(c.Admin)
	namespaced := client.Resource(format.GroupVersion.WithResource(format.Resource))
	clusterReports := client.Resource(format.GroupVersion.WithResource(format.ClusterResource))
	gas := c.As("gina", "gas-team")
	for _, name := range []string{"gas-web", "gas-api"} {
		if _, err := gas.CoreV1().Namespaces().Create(ctx, namespace(name, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"logs", "tail"} {
		p := pod(name, func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "log", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log/app"}}}}
			s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "log", MountPath: "/var/log", ReadOnly: true}}
		})
		if _, err := gas.CoreV1().Pods("gas-web").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("gas may mount /var/log read-only: %v", err)
		}
	}
	// Audits that found nothing write nothing.
	within(t, 30*time.Second, "two clean audits", func(context.Context) error {
		if line := metricAt(t, c, "tenantguard_audit_objects "); line == "" || strings.HasSuffix(line, " 0") {
			return fmt.Errorf("no audit yet: %q", line)
		}
		return nil
	})
	if _, err := namespaced.Namespace("gas-web").Get(ctx, reportName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a report in gas-web before any violation: %v", err)
	}

	loose := registryDoc(t, c)
	tight := regexp.MustCompile(`(?m)^ *- \{pathPrefix: /var/log, readOnly: true\}\n`).ReplaceAllString(loose, "")
	tight = strings.Replace(tight, "allowedHostPaths:\n", "allowedHostPaths: []\n", 1)
	tight = strings.Replace(tight, "namespaceQuota: 2\n", "namespaceQuota: 1\n", 1) // gas's
	if strings.Contains(tight, "pathPrefix: /var/log") || !strings.Contains(tight, "namespaceQuota: 1\n") {
		t.Fatalf("the example registry changed: gas's host path grant and namespace quota are not where the test expects them:\n%s", loose)
	}
	setRegistryDoc(t, c, tight)

	within(t, 30*time.Second, "the report of gas-web with both pods' host-path rows", func(ctx context.Context) error {
		r, err := namespaced.Namespace("gas-web").Get(ctx, reportName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := hasRow(r, "host-path", "Pod", "logs"); err != nil {
			return err
		}
		return hasRow(r, "host-path", "Pod", "tail")
	})
	within(t, 30*time.Second, "the cluster report with both gas namespaces' namespace-quota rows", func(ctx context.Context) error {
		r, err := clusterReports.Get(ctx, reportName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := hasRow(r, "namespace-quota", "Namespace", "gas-web"); err != nil {
			return err
		}
		return hasRow(r, "namespace-quota", "Namespace", "gas-api")
	})
	within(t, 30*time.Second, "the violations gauge", func(context.Context) error {
		for rule, want := range map[string]string{"host-path": "2", "namespace-quota": "2"} {
			if line := metricAt(t, c, `tenantguard_audit_violations{mode="deny",rule="`+rule+`",tenant="gas"}`); !strings.HasSuffix(line, " "+want) {
				return fmt.Errorf("%s: %q, want %s", rule, line, want)
			}
		}
		return nil
	})

	// Audits that find the same write nothing: the reports' resource
	// versions stay.
	versions := func() string {
		r, err := namespaced.Namespace("gas-web").Get(ctx, reportName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cr, err := clusterReports.Get(ctx, reportName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetResourceVersion() + "/" + cr.GetResourceVersion()
	}
	before := versions()
	for i := range 2 {
		last := metricAt(t, c, "tenantguard_audit_last_run_timestamp_seconds ")
		within(t, 30*time.Second, fmt.Sprintf("audit %d after the reports were written", i+1), func(context.Context) error {
			if now := metricAt(t, c, "tenantguard_audit_last_run_timestamp_seconds "); now == last {
				return fmt.Errorf("no audit since %q", last)
			}
			return nil
		})
	}
	if after := versions(); after != before {
		t.Errorf("the reports' resource versions went from %s to %s: audits that found the same wrote them again", before, after)
	}

	// Fixed one by one: the pods deleted (by an administrator: a tenant
	// could too), the quota given back.
	deletePod := func(name string) {
		if err := c.Client.CoreV1().Pods("gas-web").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	deletePod("tail")
	within(t, 30*time.Second, "the deleted pod's row gone from the report that stays", func(ctx context.Context) error {
		r, err := namespaced.Namespace("gas-web").Get(ctx, reportName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if hasRow(r, "host-path", "Pod", "tail") == nil {
			return errors.New("the row of the deleted pod tail is still there")
		}
		return hasRow(r, "host-path", "Pod", "logs")
	})
	deletePod("logs")
	setRegistryDoc(t, c, strings.Replace(tight, "namespaceQuota: 1\n", "namespaceQuota: 2\n", 1))
	within(t, 30*time.Second, "both reports pruned", func(ctx context.Context) error {
		if _, err := namespaced.Namespace("gas-web").Get(ctx, reportName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("gas-web's report: %w", err)
		}
		if _, err := clusterReports.Get(ctx, reportName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the cluster report: %w", err)
		}
		return nil
	})
}

// hasRow is nil when the report has a fail result of rule about the object.
func hasRow(r *unstructured.Unstructured, rule, kind, name string) error {
	const result = "fail"
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
