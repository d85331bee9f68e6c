package e2e

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
// seconds, with the report CRDs installed. Two gas pods and a Deployment
// mounting /var/log are admitted while gas may do so read-only; the
// registry is tightened (no host paths, one namespace where gas has two):
// the report of their namespace appears with their host-path rows, the
// cluster report with both namespaces' namespace-quota rows, and the gauge
// counts them; the audit's list of Deployments refused and one pod deleted,
// the pod's row goes and the Deployment's stays; the rest deleted and the
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
	logVolume := func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "log", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log/app"}}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "log", MountPath: "/var/log", ReadOnly: true}}
	}
	for _, name := range []string{"logs", "tail"} {
		if _, err := gas.CoreV1().Pods("gas-web").Create(ctx, pod(name, logVolume), metav1.CreateOptions{}); err != nil {
			t.Fatalf("gas may mount /var/log read-only: %v", err)
		}
	}
	if _, err := gas.AppsV1().Deployments("gas-web").Create(ctx, deployment("collector", logVolume), metav1.CreateOptions{}); err != nil {
		t.Fatalf("gas may mount /var/log read-only: %v", err)
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

	within(t, 30*time.Second, "the report of gas-web with both pods' and the Deployment's host-path rows", func(ctx context.Context) error {
		r, err := namespaced.Namespace("gas-web").Get(ctx, reportName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return errors.Join(hasRow(r, "host-path", "Pod", "logs"), hasRow(r, "host-path", "Pod", "tail"), hasRow(r, "host-path", "Deployment", "collector"))
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
		for rule, want := range map[string]string{"host-path": "3", "namespace-quota": "2"} {
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
	// could too), the quota given back. Meanwhile the audit may not list
	// Deployments (its ClusterRole edited): the Deployment's row, read back
	// from the report, stays, and the cluster report says why.
	grantDeployments(t, c, false)
	deletePod := func(name string) {
		if err := c.Client.CoreV1().Pods("gas-web").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	deletePod("tail")
	within(t, 30*time.Second, "the deleted pod's row gone from the report that stays, the Deployment's carried over", func(ctx context.Context) error {
		r, err := namespaced.Namespace("gas-web").Get(ctx, reportName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if hasRow(r, "host-path", "Pod", "tail") == nil {
			return errors.New("the row of the deleted pod tail is still there")
		}
		if err := errors.Join(hasRow(r, "host-path", "Pod", "logs"), hasRow(r, "host-path", "Deployment", "collector")); err != nil {
			return err
		}
		cr, err := clusterReports.Get(ctx, reportName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return hasResult(cr, "error", reports.ErrorPolicy, "deployments.apps is forbidden")
	})
	grantDeployments(t, c, true)
	deletePod("logs")
	if err := c.Client.AppsV1().Deployments("gas-web").Delete(ctx, "collector", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
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

// hasResult is nil when the report has a result of policy whose message
// contains text.
func hasResult(r *unstructured.Unstructured, result, policy, text string) error {
	results, _, _ := unstructured.NestedSlice(r.Object, "results")
	for _, item := range results {
		if res, _ := item.(map[string]any); res["result"] == result && res["policy"] == policy && strings.Contains(fmt.Sprint(res["message"]), text) {
			return nil
		}
	}
	return fmt.Errorf("no %s result of %s saying %q in %v", result, policy, text, results)
}

// grantDeployments gives tenantguard's ClusterRole list on Deployments
// back, or takes it away (grant false), as an administrator editing it.
func grantDeployments(t *testing.T, c *live.Cluster, grant bool) {
	t.Helper()
	roles := c.Client.RbacV1().ClusterRoles()
	role, err := roles.Get(t.Context(), "tenantguard", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.APIGroups, "apps") })
	if i < 0 {
		t.Fatal("tenantguard's ClusterRole grants nothing on apps")
	}
	rule := &role.Rules[i]
	rule.Resources = slices.DeleteFunc(rule.Resources, func(r string) bool { return r == "deployments" })
	if grant {
		rule.Resources = append(rule.Resources, "deployments")
	}
	if _, err := roles.Update(t.Context(), role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
