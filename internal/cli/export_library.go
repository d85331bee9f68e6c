package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// libraryFlags are the flags every manifest export shares.
type libraryFlags struct {
	registryFile, output string
	policy               policyFlag
	opts                 export.Options
}

// newLibraryCommand is an export of manifests for engineName, built by build.
func newLibraryCommand(use, short, long, example, engineName string, build func(*registry.Snapshot, export.Options) (*export.Library, error)) *cobra.Command {
	var f libraryFlags
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long,
		Example: example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, engineName, func(snap *registry.Snapshot) (*export.Library, error) { return build(snap, f.opts) })
		},
	}
	cmd.Flags().StringVar(&f.registryFile, "registry", "", "the tenant registry (TenantRegistry or its ConfigMap)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "a directory (one file per object, in apply order), FILE.yaml for one stream, or - for stdout")
	cmd.Flags().StringSliceVar(&f.opts.Managers, "manager", []string{engine.DefaultManager}, "user names of tenantguard itself, allowed to change the companion resources")
	f.policy.register(cmd.Flags())
	return cmd
}

// run loads the registry, builds the library and writes it with its
// coverage table; the table goes to stderr when the objects go to stdout.
func (f *libraryFlags) run(cmd *cobra.Command, engineName string, build func(*registry.Snapshot) (*export.Library, error)) error {
	if f.registryFile == "" || f.output == "" {
		return usageErrorf("--registry and -o are required")
	}
	cat, err := f.policy.load()
	if err != nil {
		return err
	}
	f.opts.Catalog = cat
	snap, err := loadRegistry(f.registryFile, cat)
	if err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	lib, err := build(snap)
	if err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	report := cmd.OutOrStdout()
	switch {
	case f.output == "-":
		report = cmd.ErrOrStderr()
		err = lib.WriteYAML(cmd.OutOrStdout())
	case strings.HasSuffix(f.output, ".yaml") || strings.HasSuffix(f.output, ".yml"):
		err = writeOutput(f.output, lib.WriteYAML)
	default:
		err = lib.WriteDir(f.output)
	}
	if err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	_, _ = fmt.Fprintf(report, "wrote %s: %d objects for %s\n", f.output, len(lib.Objects), engineName)
	return coverageTable(report, engineName, cat, func(rule string) string { return lib.Coverage[rule] })
}

func writeOutput(path string, write func(io.Writer) error) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(out); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
