package cli

import (
	"github.com/spf13/cobra"

	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
)

func newExportVAPCommand() *cobra.Command {
	var flags libraryFlags
	opts := export.VAPOptions{}
	cmd := &cobra.Command{
		Use:   "vap --registry FILE -o DIR|FILE.yaml|-",
		Short: "Write ValidatingAdmissionPolicies, their bindings and parameter object",
		Long: `Write the rules for the API server's own ValidatingAdmissionPolicy: the
CustomResourceDefinition of the parameter kind (policyparameters.policy.tenantguard.io),
the parameter object "tenantguard" holding the compiled registry, and for every
rule CEL can express a policy and a binding named tenantguard-<rule>, whose
validationActions follow the registry's enforcement mode (Deny, Warn, Audit
for dryrun). A registry change only changes the parameter object. The rules
that count objects across namespaces are not expressible and are listed as
such; run tenantguard's server or Gatekeeper for those.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return flags.run(cmd, "ValidatingAdmissionPolicy", func(snap *registry.Snapshot) (*export.Library, error) {
				return export.VAP(snap, opts)
			})
		},
	}
	flags.bind(cmd)
	cmd.Flags().StringSliceVar(&opts.Managers, "manager", []string{engine.DefaultManager}, "user names of tenantguard itself, allowed to change the companion resources")
	return cmd
}
