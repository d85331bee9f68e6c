package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// stdinName stands for standard input in problem locations.
const stdinName = "<stdin>"

func newRegistryCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Work with tenant registries",
		Example: `  tenantguard registry validate examples/registry.yaml
  kubectl get configmap -n tenantguard-system tenantguard-registry -o yaml | tenantguard registry validate -`,
	}
	var policy policyFlag
	var output string
	validate := &cobra.Command{
		Use:   "validate FILE|-",
		Short: "Validate a tenant registry and list every problem",
		Long: `Validate a tenant registry: the registry ConfigMap manifest or the bare
TenantRegistry document, from FILE or, with -, standard input. Every problem
is listed with its file:line; the rule ids settings.enforcement names must be
rules of the library (the embedded one, or --policy-dir).
Exit status: 0 valid, 1 invalid, 2 unreadable file or bad usage.`,
		Example: `  tenantguard registry validate my-tenants.yaml
  kubectl get configmap -n tenantguard-system tenantguard-registry -o yaml | tenantguard registry validate -
  tenantguard registry validate -o json my-tenants.yaml | jq '.problems[] | "\(.line): \(.message)"'
  tenantguard registry validate --policy-dir my-rules/ my-tenants.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return usageErrorf("-o must be text or json, got %q", output)
			}
			cat, err := policy.load()
			if err != nil {
				return err
			}
			snap, err := validateRegistry(cmd.InOrStdin(), args[0], cat)
			var invalid *registry.Error
			if err != nil && !errors.As(err, &invalid) {
				return err
			}
			if err := writeValidation(cmd.OutOrStdout(), output, args[0], snap, invalid); err != nil {
				return err
			}
			if invalid != nil {
				return &ExitError{Code: ExitDenied}
			}
			return nil
		},
	}
	policy.register(validate.Flags())
	outputFlag(validate, &output, "text", "text (a line per problem) or json ({file, valid, tenants, revision, problems: [{file, line, path, message}]})", "text", "json")
	cmd.AddCommand(validate)
	return cmd
}

// validateRegistry is loadRegistry for a file or, for "-", stdin.
func validateRegistry(stdin io.Reader, file string, cat *catalog.Catalog) (*registry.Snapshot, error) {
	if file != "-" {
		return loadRegistry(file, cat)
	}
	data, err := io.ReadAll(stdin)
	if err != nil {
		return nil, usageErrorf("reading the registry from standard input: %v", err)
	}
	snap, err := registry.Parse(stdinName, data)
	if err == nil && cat != nil {
		err = snap.CheckRules(cat.IDs())
	}
	return snap, err
}

// validation is the JSON of `registry validate -o json`.
type validation struct {
	File     string           `json:"file"`
	Valid    bool             `json:"valid"`
	Tenants  int              `json:"tenants"`
	Revision string           `json:"revision,omitempty"`
	Problems []problemMessage `json:"problems"`
}

type problemMessage struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

func writeValidation(w io.Writer, output, file string, snap *registry.Snapshot, invalid *registry.Error) error {
	if file == "-" {
		file = stdinName
	}
	if output == "text" {
		if invalid != nil {
			_, err := fmt.Fprintln(w, invalid.Error())
			return err
		}
		_, err := fmt.Fprintf(w, "%s: valid registry with %d tenants (revision %s)\n", file, snap.Len(), snap.Revision())
		return err
	}
	v := validation{File: file, Valid: invalid == nil, Problems: []problemMessage{}}
	if invalid != nil {
		for _, p := range invalid.Problems {
			v.Problems = append(v.Problems, problemMessage{File: p.File, Line: p.Line, Path: p.Path, Message: p.Message})
		}
	} else {
		v.Tenants, v.Revision = snap.Len(), snap.Revision()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
