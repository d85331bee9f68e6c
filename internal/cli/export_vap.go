package cli

import (
	"github.com/spf13/cobra"

	"github.com/tenantguard/tenantguard/internal/export"
)

func newExportVAPCommand() *cobra.Command {
	return newLibraryCommand(
		"vap --registry FILE -o DIR|FILE.yaml|-",
		"Write Validating and MutatingAdmissionPolicies, their bindings and parameter object",
		`Write the rules for the API server's own admission policies: the
CustomResourceDefinition of the parameter kind (policyparameters.policy.tenantguard.io),
the parameter object "tenantguard" holding the compiled registry, for every
rule CEL can express a ValidatingAdmissionPolicy and a binding named
tenantguard-<rule>, whose validationActions follow the registry's enforcement
mode (Deny, Warn, Audit for dryrun), and for every rule whose defaults CEL sets
(the tenant label, the default PriorityClass and StorageClass) a
MutatingAdmissionPolicy and a binding of the same name, which set them in
every mode (Kubernetes 1.36 or later). A change to tenants, owners or
administrators only changes the parameter object; a new tenant label or
enforcement mode needs the whole export applied again. The rules
that count objects across namespaces are not expressible and are listed as
such; run tenantguard's server or Gatekeeper for those.`,
		`  tenantguard export vap --registry examples/registry.yaml -o vap/
  tenantguard export vap --registry examples/registry.yaml -o - | kubectl apply --dry-run=server -f -`,
		"ValidatingAdmissionPolicy", export.VAP)
}
