package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tenantguard/tenantguard/generator"
	"github.com/tenantguard/tenantguard/internal/clusterview"
)

func newGenerateCommand() *cobra.Command {
	var registryFile, tenant, instanceName string
	var objectFiles []string
	cmd := &cobra.Command{
		Use: "generate --registry FILE [--objects FILE]... [--tenant NAME]",
		Example: `  tenantguard generate --registry examples/registry.yaml --objects examples/cluster.yaml
  kubectl get namespaces -o yaml > ns.yaml
  tenantguard generate --registry my-tenants.yaml --objects ns.yaml --tenant oil | kubectl apply -f -`,
		Short: "Print the companion resources of the tenant namespaces as YAML (GitOps)",
		Long: `Print, as multi-document YAML for kubectl apply, the resources tenantguard
keeps in place: the cluster-wide ClusterRoles and ClusterRoleBinding that let
owners create namespaces, and for every tenant namespace found in --objects its
ResourceQuota, LimitRange, NetworkPolicy and RoleBindings. Namespaces belong to
a tenant by the registry's tenant label. Tenants with no namespace in the input
are named on stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if registryFile == "" {
				return usageErrorf("--registry is required")
			}
			instance, err := generator.NewInstance(instanceName)
			if err != nil {
				return usageErrorf("--instance: %v", err)
			}
			snap, err := loadRegistry(registryFile, nil) // companions do not depend on the rules
			if err != nil {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			if tenant != "" {
				if _, ok := snap.Tenant(tenant); !ok {
					return usageErrorf("tenant %q is not in the registry", tenant)
				}
			}
			var namespaces []generator.Namespace
			for _, f := range objectFiles {
				objs, err := clusterview.LoadFile(f)
				if err != nil {
					return usageErrorf("%v", err)
				}
				for _, o := range objs {
					if o.Group == "" && o.Kind == "Namespace" {
						namespaces = append(namespaces, generator.Namespace{Name: o.Name, Labels: o.Labels})
					}
				}
			}
			seen := map[string]bool{}
			var mine []generator.Namespace
			for _, ns := range namespaces {
				if t, ok := generator.TenantOf(snap, ns); ok && (tenant == "" || t.Name == tenant) {
					seen[t.Name] = true
					mine = append(mine, ns)
				}
			}
			objects := instance.Namespaced(snap, mine)
			if tenant == "" { // the cluster-wide RBAC spans tenants
				objects = append(instance.Cluster(snap), objects...)
			}
			var missing []string
			for _, t := range snap.Registry().Tenants {
				if !seen[t.Name] && (tenant == "" || t.Name == tenant) {
					missing = append(missing, t.Name)
				}
			}
			if len(missing) > 0 {
				hint := ""
				if len(objectFiles) == 0 {
					hint = " (no --objects given: pass the cluster's namespaces, e.g. kubectl get namespaces -o yaml)"
				}
				_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "tenantguard: no namespace of tenant %s in the input%s; their companions are not printed\n", quoteJoin(missing), hint)
			}
			out, err := generator.YAML(objects)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&registryFile, "registry", "", "registry ConfigMap or TenantRegistry document (required)")
	f.StringArrayVar(&objectFiles, "objects", nil, "cluster objects holding the namespaces (YAML or JSON, repeatable)")
	f.StringVar(&tenant, "tenant", "", "print only this tenant's namespaced companions")
	f.StringVar(&instanceName, "instance", generator.DefaultInstance, "the server's --instance (the chart's release fullname), from which the objects' names derive")
	return cmd
}

func quoteJoin(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range slices.Sorted(slices.Values(names)) {
		quoted[i] = strconv.Quote(n)
	}
	return strings.Join(quoted, ", ")
}
