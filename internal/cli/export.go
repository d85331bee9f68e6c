package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/export"
)

func newExportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use: "export",
		Example: `  tenantguard export bundle --registry examples/registry.yaml -o bundle/
  tenantguard export gatekeeper --registry examples/registry.yaml -o - | kubectl apply -f -`,
		Short: "Write the tenant rules for another policy engine",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newExportBundleCommand(), newExportGatekeeperCommand(), newExportKyvernoCommand(), newExportVAPCommand())
	return cmd
}

func newExportBundleCommand() *cobra.Command {
	var registryFile, output, keyFile string
	var policy policyFlag
	opts := export.BundleOptions{}
	cmd := &cobra.Command{
		Use: "bundle --registry FILE -o DIR|FILE.tar.gz",
		Example: `  tenantguard export bundle --registry examples/registry.yaml -o bundle/
  tenantguard export bundle --registry examples/registry.yaml -o bundle.tar.gz --signing-key key.pem
  opa run --server --bundle bundle.tar.gz`,
		Short: "Write an OPA bundle: the Rego library, the registry as data, a .manifest",
		Long: `Write an OPA bundle of tenantguard's whole rule library (its tests too, so
that opa test -b runs on it) with the registry as data.tenantguard.registry and
a .manifest (roots [tenantguard], revision, rego_version 1). -o FILE.tar.gz
writes an archive (what opa build writes), any other -o a directory. With
--signing-key the bundle is signed as opa sign does; opa run
--verification-key checks it.

Serve it with opa run --server --bundle and kube-mgmt replicating namespaces,
priorityclasses and the counted resources into data.kubernetes; point the
mutating webhook at /v0/data/tenantguard/kubernetes/mutate and the validating
one at /v0/data/tenantguard/kubernetes/validate. The decision entrypoints for
input already holding the cluster facts are tenantguard/main/mutations and
tenantguard/main/decision.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if registryFile == "" || output == "" {
				return usageErrorf("--registry and -o are required")
			}
			cat, err := policy.load()
			if err != nil {
				return err
			}
			opts.Catalog = cat
			snap, err := loadRegistry(registryFile, cat)
			if err != nil {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			if keyFile != "" {
				if opts.SigningKey, err = os.ReadFile(keyFile); err != nil {
					return usageErrorf("--signing-key: %v", err)
				}
			}
			b, err := export.Bundle(snap, opts)
			if err != nil {
				return &ExitError{Code: 1, Err: err}
			}
			if strings.HasSuffix(output, ".tar.gz") || strings.HasSuffix(output, ".tgz") {
				var buf bytes.Buffer
				if err := export.WriteTarGz(&buf, b); err != nil {
					return &ExitError{Code: 1, Err: err}
				}
				err = os.WriteFile(output, buf.Bytes(), 0o644) //nolint:gosec // a policy bundle is meant to be read
			} else {
				err = export.WriteDir(output, b)
			}
			if err != nil {
				return &ExitError{Code: 1, Err: err}
			}
			out := cmd.OutOrStdout()
			signed := ""
			if len(opts.SigningKey) > 0 {
				signed = ", signed"
			}
			_, _ = fmt.Fprintf(out, "wrote %s: revision %s, %d modules, roots [%s]%s\n", output, b.Manifest.Revision, len(b.Modules), export.Root, signed)
			return coverageTable(out, "OPA bundle", cat, func(id string) string {
				if r, _ := cat.Rule(id); r.Claims(catalog.EngineOPA) {
					return "covered (the rule library itself)"
				}
				return "not covered: the rule does not claim opa"
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&registryFile, "registry", "", "the tenant registry (TenantRegistry or its ConfigMap)")
	f.StringVarP(&output, "output", "o", "", "bundle directory, or FILE.tar.gz for an archive")
	f.StringVar(&opts.Revision, "revision", "", "manifest revision; a hash of the contents when empty")
	f.StringSliceVar(&opts.Managers, "manager", []string{engine.DefaultManager}, "user names of tenantguard itself, allowed to change the companion resources")
	f.StringVar(&keyFile, "signing-key", "", "PEM private key (or HS secret) to sign the bundle with")
	f.StringVar(&opts.SigningAlg, "signing-alg", "RS256", "signing algorithm, as opa sign's --signing-alg")
	f.StringVar(&opts.KeyID, "key-id", "", "key id recorded in the signature, as opa's --verification-key-id expects")
	policy.register(f)
	return cmd
}

// coverageTable prints one line per rule id of the library: how the
// engine covers it.
func coverageTable(w io.Writer, engineName string, cat *catalog.Catalog, coverage func(rule string) string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintf(tw, "\nrule\t%s\n", engineName)
	for _, id := range cat.IDs() {
		_, _ = fmt.Fprintf(tw, "%s\t%s\n", id, coverage(id))
	}
	return tw.Flush()
}
