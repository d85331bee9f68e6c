package cli

import (
	"github.com/spf13/cobra"

	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
)

func newExportKyvernoCommand() *cobra.Command {
	var flags libraryFlags
	opts := export.KyvernoOptions{}
	cmd := &cobra.Command{
		Use:   "kyverno --registry FILE -o DIR|FILE.yaml|-",
		Short: "Write Kyverno ValidatingPolicies (CEL)",
		Long: `Write the rules for Kyverno as ValidatingPolicies (policies.kyverno.io/v1),
Kyverno's CEL policy type: one per rule CEL can express, named
tenantguard-<rule>, with the registry's enforcement mode as its
validationActions (Deny, Warn, Audit for dryrun) and the compiled registry as
a CEL variable. The CEL is the same as the ValidatingAdmissionPolicies' of
export vap. The rules that count objects across namespaces are not
expressible and are listed as such.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return flags.run(cmd, "Kyverno", func(snap *registry.Snapshot) (*export.Library, error) {
				return export.Kyverno(snap, opts)
			})
		},
	}
	flags.bind(cmd)
	cmd.Flags().StringSliceVar(&opts.Managers, "manager", []string{engine.DefaultManager}, "user names of tenantguard itself, allowed to change the companion resources")
	return cmd
}
