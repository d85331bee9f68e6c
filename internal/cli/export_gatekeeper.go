package cli

import (
	"github.com/spf13/cobra"

	"github.com/tenantguard/tenantguard/internal/export"
)

func newExportGatekeeperCommand() *cobra.Command {
	return newLibraryCommand(
		"gatekeeper --registry FILE -o DIR|FILE.yaml|-",
		"Write Gatekeeper ConstraintTemplates, Constraints and the SyncSet they need",
		`Write the rules for OPA Gatekeeper: one ConstraintTemplate per rule family
(Rego v1 code, the whole rule library as template libraries), one Constraint
per rule id named after it, with the registry's enforcement mode as its
enforcementAction (deny, warn, dryrun) and the compiled registry as its
parameters, and a SyncSet replicating what the referential rules read
(namespaces, priority classes, the kinds tenant quotas count) into
Gatekeeper's inventory. Every rule is covered; messages are tenantguard's own.

Defaults (the tenant label on new namespaces, default PriorityClass and
StorageClass) are mutations, which these validating templates do not make.`,
		`  tenantguard export gatekeeper --registry examples/registry.yaml -o gatekeeper/
  tenantguard export gatekeeper --registry examples/registry.yaml -o - | kubectl apply --dry-run=server -f -`,
		"Gatekeeper", export.Gatekeeper)
}
