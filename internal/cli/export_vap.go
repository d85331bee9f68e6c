package cli

import (
	"github.com/spf13/cobra"

	"github.com/tenantguard/tenantguard/internal/export"
)

func newExportVAPCommand() *cobra.Command {
	return newLibraryCommand(
		"vap --registry FILE -o DIR|FILE.yaml|-",
		"Write ValidatingAdmissionPolicies, their bindings and parameter object",
		`Write the rules for the API server's own ValidatingAdmissionPolicy: the
CustomResourceDefinition of the parameter kind (policyparameters.policy.tenantguard.io),
the parameter object "tenantguard" holding the compiled registry, and for every
rule CEL can express a policy and a binding named tenantguard-<rule>, whose
validationActions follow the registry's enforcement mode (Deny, Warn, Audit
for dryrun). A change to tenants, owners or administrators only changes the
parameter object; a new tenant label or enforcement mode needs the whole
export applied again. The rules
that count objects across namespaces are not expressible and are listed as
such; run tenantguard's server or Gatekeeper for those.`,
		"ValidatingAdmissionPolicy", export.VAP)
}
