package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tenantguard/tenantguard/internal/registry"
)

// webhookCheckRule is the rule the check's request must break: a namespace
// claiming a tenant its creator does not own, refused whatever the registry
// holds.
const webhookCheckRule = "namespace-ownership"

func newWebhookCheckCommand() *cobra.Command {
	var kubeconfig, name, label string
	cmd := &cobra.Command{
		Use:   "webhook-check",
		Short: "Check that the API server sends requests to tenantguard and enforces its answer",
		Long: `Send the API server a server-side dry-run that only tenantguard refuses: a
namespace labelled as a tenant's, created by an identity that owns no tenant
and that RBAC lets create namespaces (not an administrator of the registry).
Nothing is created. The chart's helm test hook runs it.
Exit status: 0 when tenantguard's webhook denied it with [` + webhookCheckRule + `]; 1 when the
request was allowed, refused by something else (RBAC, another webhook) or the
webhook could not be called.`,
		Example: `  # as the identity of the chart's helm test hook
  tenantguard webhook-check --namespace tenantguard-test
  tenantguard webhook-check --kubeconfig tester.kubeconfig --tenant-label example.com/tenant`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kubeConfig(kubeconfig)
			if err != nil {
				return usageErrorf("kubeconfig: %v", err)
			}
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return usageErrorf("kubeconfig: %v", err)
			}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{label: name}}}
			_, err = client.CoreV1().Namespaces().Create(cmd.Context(), ns, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err := judgeWebhookCheck(err); err != nil {
				return &ExitError{Code: ExitDenied, Err: err}
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "ok: the API server sent the dry-run create of namespace %q to tenantguard, which denied it with [%s]\n", name, webhookCheckRule)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; $KUBECONFIG, else in-cluster configuration, else ~/.kube/config when empty")
	f.StringVar(&name, "namespace", "tenantguard-webhook-check", "name of the namespace, and of the tenant its label claims")
	f.StringVar(&label, "tenant-label", registry.DefaultTenantLabel, "the registry's settings.tenantLabel")
	return cmd
}

// judgeWebhookCheck is nil when err is tenantguard's denial, else why the
// check failed.
func judgeWebhookCheck(err error) error {
	switch {
	case err == nil:
		return errors.New("the dry-run was allowed: tenantguard did not see it (is the namespace exempt, or the identity an administrator or owner?)")
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "tenantguard.io") && strings.Contains(err.Error(), "["+webhookCheckRule+"]"):
		return nil
	case strings.Contains(err.Error(), "failed calling webhook"):
		return fmt.Errorf("the API server could not call tenantguard: %w", err)
	}
	return fmt.Errorf("refused, but not by tenantguard's [%s]: %w", webhookCheckRule, err)
}
