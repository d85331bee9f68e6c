package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/yamlerr"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

type reviewOptions struct {
	registry  string
	objects   []string
	output    string
	policy    policyFlag
	evaluator string
}

func newReviewCommand() *cobra.Command {
	var o reviewOptions
	cmd := &cobra.Command{
		Use: "review --registry FILE [--objects FILE]... [REQUEST|-]",
		Example: `  tenantguard review --registry examples/registry.yaml --objects examples/cluster.yaml -o text examples/requests/pod-hostnetwork.yaml
  tenantguard review --registry examples/registry.yaml < examples/requests/namespace-create.yaml | jq .response.allowed`,
		Short: "Decide one AdmissionReview offline, as the admission server would",
		Long: `Evaluate one AdmissionReview v1 (JSON or YAML, from a file or stdin) against a
tenant registry. --objects files (multi-document YAML, Lists or JSON arrays)
are the existing cluster objects: the namespaces, pods, claims ... that
ownership and counting see. Mutations are applied first, then the validating
rules judge the mutated object.

Prints the AdmissionReview response as JSON. Exit status: 0 allowed, 1 denied,
2 bad input or usage.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			request := "-"
			if len(args) == 1 {
				request = args[0]
			}
			return o.run(cmd, request)
		},
	}
	cmd.Flags().StringVar(&o.registry, "registry", "", "tenant registry: ConfigMap manifest or TenantRegistry document (required)")
	cmd.Flags().StringArrayVar(&o.objects, "objects", nil, "existing cluster objects (repeatable)")
	outputFlag(cmd, &o.output, "json", "json (the AdmissionReview response) or text (for people)", "json", "text")
	cmd.Flags().StringVar(&o.evaluator, "evaluator", engine.EvaluatorAuto, "how the rules run, as serve --evaluator: auto, plan or topdown")
	o.policy.register(cmd.Flags())
	_ = cmd.MarkFlagRequired("registry")
	return cmd
}

func (o *reviewOptions) run(cmd *cobra.Command, request string) error {
	if o.output != "json" && o.output != "text" {
		return usageErrorf("--output must be json or text, not %q", o.output)
	}
	if !slices.Contains(engine.Evaluators, o.evaluator) {
		return usageErrorf("--evaluator must be one of %s, got %q", strings.Join(engine.Evaluators, ", "), o.evaluator)
	}
	cat, err := o.policy.load()
	if err != nil {
		return err
	}
	reg, err := loadRegistry(o.registry, cat)
	if err != nil {
		var invalid *registry.Error
		if errors.As(err, &invalid) {
			return &ExitError{Code: ExitUsage, Err: invalid}
		}
		return err
	}
	view := clusterview.New(reg.TenantLabel())
	for _, file := range o.objects {
		objects, err := clusterview.LoadFile(file)
		if err != nil {
			return usageErrorf("%v", err)
		}
		for _, obj := range objects {
			view.Upsert(obj)
		}
	}
	data, err := readInput(cmd.InOrStdin(), request)
	if err != nil {
		return usageErrorf("reading the request: %v", err)
	}
	req, err := admission.Decode(data)
	if err != nil {
		return usageErrorf("%s", requestError(request, data, err))
	}
	// As serve runs a --policy-dir: its own tests first, on the evaluator
	// that decides.
	eng, err := engine.New(cmd.Context(), reg, engine.Options{PolicyOptions: engine.PolicyOptions{Catalog: cat, Evaluator: o.evaluator, Test: o.policy.dir != ""}})
	if err != nil {
		return err
	}
	decision, err := eng.Review(cmd.Context(), req, view)
	if err != nil {
		return err
	}
	for _, v := range decision.DryRun {
		if _, err := fmt.Fprintf(cmd.ErrOrStderr(), "dryrun: %s\n", v); err != nil {
			return err
		}
	}
	if o.output == "text" {
		err = writeText(cmd.OutOrStdout(), decision)
	} else {
		err = writeJSON(cmd.OutOrStdout(), decision.Response(req.UID))
	}
	if err != nil {
		return err
	}
	if !decision.Allowed {
		return &ExitError{Code: ExitDenied}
	}
	return nil
}

// requestError is a request that does not decode, named by its file
// (<stdin> for -) and, for a YAML syntax error, the line.
func requestError(file string, data []byte, err error) string {
	if file == "-" {
		file = "<stdin>"
	}
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] != '{' {
		var v any
		if yerr := yaml.Unmarshal(data, &v); yerr != nil {
			if syntax, ok := yamlerr.Syntax(yerr, data); ok && syntax.Line > 0 {
				return fmt.Sprintf("%s:%d: not YAML: %s", file, syntax.Line, syntax.Message)
			}
		}
	}
	return fmt.Sprintf("%s: %v", file, err)
}

func readInput(stdin io.Reader, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(io.LimitReader(stdin, maxRequestBytes))
	}
	return os.ReadFile(name)
}

// maxRequestBytes bounds a request read from stdin (the API server sends at most 3 MiB objects).
const maxRequestBytes = 16 << 20

func writeJSON(w io.Writer, resp *admission.Response) error {
	out, err := resp.JSON()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", out)
	return err
}

// writeText prints a decision for people: the verdict, every reason, and the patch.
func writeText(w io.Writer, d *admission.Decision) error {
	verdict := "allowed"
	if !d.Allowed {
		verdict = "denied"
	}
	lines := []string{verdict}
	for _, group := range []struct {
		label string
		vs    []admission.Violation
	}{{"deny", d.Deny}, {"warn", d.Warn}, {"dryrun", d.DryRun}} {
		for _, m := range admission.Messages(group.vs) {
			lines = append(lines, fmt.Sprintf("  %-6s %s", group.label, m))
		}
	}
	if d.Patch != nil {
		lines = append(lines, "  patch  "+string(d.Patch))
	}
	_, err := fmt.Fprintln(w, strings.Join(lines, "\n"))
	return err
}
