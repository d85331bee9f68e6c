package cli

import (
	"github.com/spf13/cobra"

	"github.com/tenantguard/tenantguard/internal/export"
)

func newExportGatekeeperCommand() *cobra.Command {
	return newLibraryCommand(
		"gatekeeper --registry FILE -o DIR|FILE.yaml|-",
		"Write Gatekeeper ConstraintTemplates, Constraints and the SyncSet they need",
		`Write the rules for OPA Gatekeeper as Gatekeeper users write policy: one
ConstraintTemplate per rule family (one per rule for the pod security
checks, as gatekeeper-library writes them), each with a parameters schema
and the family's Rego v1 as template libraries; one Constraint per template
(per enforcement mode when a registry puts the family's rules in several),
whose enforcementAction is the mode (deny, warn, dryrun) and whose
parameters are only the parts of the compiled registry its rules read; and
a SyncSet replicating what the counting rules read (namespaces, the kinds
tenant quotas count, the kinds that serve hosts) into Gatekeeper's
inventory. Every rule is covered; messages are tenantguard's own.

Defaults (the tenant label on new namespaces, default PriorityClass and
StorageClass) are mutations, which these validating templates do not make.`,
		`  tenantguard export gatekeeper --registry examples/registry.yaml -o gatekeeper/
  tenantguard export gatekeeper --registry examples/registry.yaml -o - | kubectl apply --dry-run=server -f -`,
		"Gatekeeper", export.Gatekeeper)
}
