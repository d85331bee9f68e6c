package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tenantguard/tenantguard/internal/registry"
)

func newRegistryCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Work with tenant registries",
	}
	var policy policyFlag
	validate := &cobra.Command{
		Use:   "validate FILE",
		Short: "Validate a tenant registry and list every problem",
		Long: `Validate a tenant registry: the registry ConfigMap manifest or the bare
TenantRegistry document. Every problem is listed with its file:line; the rule
ids settings.enforcement names must be rules of the library (the embedded
one, or --policy-dir).
Exit status: 0 valid, 1 invalid, 2 unreadable file or bad usage.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := policy.load()
			if err != nil {
				return err
			}
			snap, err := loadRegistry(args[0], cat)
			var invalid *registry.Error
			if errors.As(err, &invalid) {
				if _, err := fmt.Fprintln(cmd.OutOrStdout(), invalid.Error()); err != nil {
					return err
				}
				return &ExitError{Code: ExitDenied}
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: valid registry with %d tenants (revision %s)\n", args[0], snap.Len(), snap.Revision())
			return err
		},
	}
	policy.register(validate.Flags())
	cmd.AddCommand(validate)
	return cmd
}
