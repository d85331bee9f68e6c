package cli

import (
	"github.com/spf13/cobra"

	"github.com/tenantguard/tenantguard/internal/export"
)

func newExportKyvernoCommand() *cobra.Command {
	return newLibraryCommand(
		"kyverno --registry FILE -o DIR|FILE.yaml|-",
		"Write Kyverno ValidatingPolicies (CEL)",
		`Write the rules for Kyverno as ValidatingPolicies (policies.kyverno.io/v1),
Kyverno's CEL policy type: one per rule CEL can express, named
tenantguard-<rule>, with the registry's enforcement mode as its
validationActions (Deny, Warn, Audit for dryrun) and the compiled registry as
a CEL variable. The CEL is the same as the ValidatingAdmissionPolicies' of
export vap. The rules that count objects across namespaces are not
expressible and are listed as such.`,
		`  tenantguard export kyverno --registry examples/registry.yaml -o kyverno/
  tenantguard export kyverno --registry examples/registry.yaml -o - | kubectl apply --dry-run=server -f -`,
		"Kyverno", export.Kyverno)
}
