// Command demo is `make run`: it starts a real local control plane
// (kube-apiserver and etcd), `tenantguard serve` with the example registry
// and the webhook configurations, then sends requests as different users and
// prints what the API server answered. With -hold it keeps everything
// running and prints a kubeconfig to try requests by hand, and
// tests/demo/audit.sh against it: the audit of a tightened registry, and
// the background audit's policy reports (the report CRDs are installed;
// -audit-report-format chooses their API).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/tests/live"
)

func main() {
	hold := flag.Bool("hold", false, "keep the control plane and the webhook running until interrupted")
	verbose := flag.Bool("v", false, "print tenantguard's JSON log lines too")
	auditInterval := flag.Duration("audit-interval", 5*time.Minute, "tenantguard serve --audit-interval: how often the background audit runs (also shortly after each registry change)")
	auditFormat := flag.String("audit-report-format", "openreports", "tenantguard serve --audit-report-format: openreports or wgpolicyk8s")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	serveArgs := []string{"--audit-interval=" + auditInterval.String(), "--audit-report-format=" + *auditFormat}
	err := run(ctx, os.Stdout, *hold, *verbose, serveArgs, *auditFormat)
	stop()
	if err != nil {
		_, _ = fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, hold, verbose bool, serveArgs []string, auditFormat string) error {
	_, _ = fmt.Fprintln(out, "Starting kube-apiserver + etcd, then tenantguard serve with examples/registry.yaml ...")
	opts := live.Options{ServeArgs: serveArgs, ReportCRDs: true}
	if verbose {
		opts.Logs = os.Stderr
	}
	cluster, err := live.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer cluster.Stop()
	if auditFormat == "wgpolicyk8s" {
		if err := grantPolicyReports(ctx, cluster); err != nil {
			return err
		}
	}
	version, err := cluster.Client.Discovery().ServerVersion()
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "kube-apiserver %s at %s; tenantguard at %s (ready)\n\n", version.GitVersion, cluster.Admin.Host, cluster.BaseURL)

	failures := 0
	for _, s := range scenario() {
		detail, err := s.do(ctx, cluster.As(s.user, s.groups...))
		verdict := "ALLOWED"
		if err != nil {
			verdict, detail = "DENIED ", denial(err)
		}
		if (err == nil) != s.expectAllowed {
			verdict = "UNEXPECTED " + verdict
			failures++
		}
		_, _ = fmt.Fprintf(out, "%-18s %-47s %s %s\n", s.who(), s.what, verdict, detail)
	}
	_, _ = fmt.Fprintf(out, "\nEvery request above went through the real API server, which called tenantguard's /mutate and /validate.\n")
	if names, err := companions(ctx, cluster, "oil-dev"); err == nil {
		_, _ = fmt.Fprintf(out, "Companions tenantguard keeps in oil-dev: %s\n", strings.Join(names, ", "))
	}
	if failures > 0 {
		return fmt.Errorf("%d requests were not answered as expected", failures)
	}
	if !hold {
		_, _ = fmt.Fprintln(out, "Run `go run ./tests/demo -hold` to keep it running and try your own requests.")
		return nil
	}
	return holdOpen(ctx, out, cluster)
}

// denial is the tenantguard part of an API error: its "[rule] sentence" lines.
func denial(err error) string {
	msg := err.Error()
	if _, after, ok := strings.Cut(msg, "denied the request: "); ok {
		return strings.ReplaceAll(after, "\n", "\n"+strings.Repeat(" ", 75))
	}
	return msg
}

func holdOpen(ctx context.Context, out io.Writer, cluster *live.Cluster) error {
	dir, err := os.MkdirTemp("", "tenantguard-demo-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	if err := cluster.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "\nHolding. Try, with kubectl:\n  export KUBECONFIG=%s\n  kubectl --as alice --as-group %s create namespace oil-play\n  kubectl --as bob --as-group %s create namespace oil-nope\n"+
		"The audit of a tightened registry, then the background audit's reports (docs/cli.md, \"Audit a registry change\"):\n  tests/demo/audit.sh\nCtrl-C stops everything.\n",
		kubeconfig, live.TenantsGroup, live.TenantsGroup)
	<-ctx.Done()
	return nil
}

// companions names the objects tenantguard manages in a namespace, sorted.
func companions(ctx context.Context, cluster *live.Cluster, namespace string) ([]string, error) {
	found, err := cluster.Companions(ctx, namespace, "app.kubernetes.io/managed-by=tenantguard")
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(found)), nil
}

// grantPolicyReports lets tenantguard write wgpolicyk8s.io's PolicyReports,
// as the chart does with audit.reportFormat wgpolicyk8s: deploy/rbac, which
// the cluster installs, grants openreports.io's.
func grantPolicyReports(ctx context.Context, cluster *live.Cluster) error {
	const name = "tenantguard-policyreports"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"wgpolicyk8s.io"}, Resources: []string{"policyreports", "clusterpolicyreports"}, Verbs: []string{"list", "create", "patch", "delete"},
	}}}
	if _, err := cluster.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: engine.DefaultManager}}}
	_, err := cluster.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	return err
}
