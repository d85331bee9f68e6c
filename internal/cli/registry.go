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
	cmd.AddCommand(&cobra.Command{
		Use:   "validate FILE",
		Short: "Validate a tenant registry and list every problem",
		Long: `Validate a tenant registry: the registry ConfigMap manifest or the bare
TenantRegistry document. Every problem is listed with its file:line.
Exit status: 0 valid, 1 invalid, 2 unreadable file or bad usage.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			snap, err := loadRegistry(args[0])
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
	})
	return cmd
}

// loadRegistry loads a registry; an unreadable file is a usage error, an
// invalid one a *registry.Error.
func loadRegistry(file string) (*registry.Snapshot, error) {
	snap, err := registry.Load(file)
	var invalid *registry.Error
	if err != nil && !errors.As(err, &invalid) {
		return nil, usageErrorf("%v", err)
	}
	return snap, err
}
