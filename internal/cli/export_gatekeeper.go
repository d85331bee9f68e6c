package cli

import (
	"github.com/spf13/cobra"

	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
)

func newExportGatekeeperCommand() *cobra.Command {
	var flags libraryFlags
	opts := export.GatekeeperOptions{}
	cmd := &cobra.Command{
		Use:   "gatekeeper --registry FILE -o DIR|FILE.yaml|-",
		Short: "Write Gatekeeper ConstraintTemplates, Constraints and the SyncSet they need",
		Long: `Write the rules for OPA Gatekeeper: one ConstraintTemplate per rule family
(Rego v1 code, the whole rule library as template libraries), one Constraint
per rule id named after it, with the registry's enforcement mode as its
enforcementAction (deny, warn, dryrun) and the compiled registry as its
parameters, and a SyncSet replicating what the referential rules read
(namespaces, priority classes, the kinds tenant quotas count) into
Gatekeeper's inventory. Every rule is covered; messages are tenantguard's own.

Defaults (the tenant label on new namespaces, default PriorityClass and
StorageClass) are mutations, which these validating templates do not make.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return flags.run(cmd, "Gatekeeper", func(snap *registry.Snapshot) (*export.Library, error) {
				return export.Gatekeeper(snap, opts)
			})
		},
	}
	flags.bind(cmd)
	cmd.Flags().StringSliceVar(&opts.Managers, "manager", []string{engine.DefaultManager}, "user names of tenantguard itself, allowed to change the companion resources")
	return cmd
}
