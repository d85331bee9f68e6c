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

	"github.com/tenantguard/tenantguard/internal/catalog"
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
	request   requestOptions
}

func newReviewCommand() *cobra.Command {
	var o reviewOptions
	cmd := &cobra.Command{
		Use: "review --registry FILE [--objects FILE]... [REQUEST|-|-f MANIFEST --as USER]",
		Example: `  tenantguard review --registry examples/registry.yaml --objects examples/cluster.yaml -o text examples/requests/pod-hostnetwork.yaml
  tenantguard review --registry examples/registry.yaml < examples/requests/namespace-create.yaml | jq .response.allowed
  # no AdmissionReview to write: the objects of a manifest, as alice creates them
  tenantguard review --registry examples/registry.yaml --objects examples/cluster.yaml -o text -f examples/manifests/web.yaml --as alice
  kubectl get deployment web -n oil-dev -o yaml | tenantguard review --registry examples/registry.yaml -o text -f - --as bob --groups oil-team --operation DELETE
  tenantguard review --registry examples/registry.yaml -o text -f new.yaml --old live.yaml --operation UPDATE --as alice`,
		Short: "Decide an AdmissionReview, or a manifest's objects, offline, as the admission server would",
		Long: `Evaluate one AdmissionReview v1 (JSON or YAML, from a file or stdin) against a
tenant registry. --objects files (multi-document YAML, Lists or JSON arrays)
are the existing cluster objects: the namespaces, pods, claims ... that
ownership and counting see. Mutations are applied first, then the validating
rules judge the mutated object.

With -f MANIFEST --as USER, no AdmissionReview is needed: for each object of
the manifest (multi-document YAML or JSON, Lists, kubectl get -o yaml output;
- is stdin) review builds the one the API server would send (kind, resource,
namespace: the object's, else --namespace, else default; the user with
--groups and system:authenticated; --operation CREATE, UPDATE with the object
of --old matched by kind, namespace and name, or DELETE of the object) and
decides it. Each object is decided against --objects alone.

Prints the AdmissionReview response as JSON, one per object with -f; -o text
prints the decision, every denial, warning and the patch for people. Exit
status: 0 allowed, 1 denied (any object with -f), 2 bad input or usage.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.request.manifest != "" {
				if len(args) == 1 {
					return usageErrorf("give either -f MANIFEST or an AdmissionReview, not both (got %q)", args[0])
				}
				return o.runManifest(cmd)
			}
			if given := o.request.given(cmd.Flags()); len(given) > 0 {
				return usageErrorf("%s: only with -f MANIFEST (an AdmissionReview names its own user and operation)", strings.Join(given, ", "))
			}
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
	o.request.register(cmd.Flags())
	_ = cmd.MarkFlagRequired("registry")
	return cmd
}

func (o *reviewOptions) run(cmd *cobra.Command, request string) error {
	in, err := o.load()
	if err != nil {
		return err
	}
	data, err := readInput(cmd.InOrStdin(), request)
	if err != nil {
		return usageErrorf("reading the request: %v", err)
	}
	req, err := admission.Decode(data)
	if err != nil {
		return usageErrorf("%s", requestError(request, data, err))
	}
	eng, err := in.engine(cmd, o)
	if err != nil {
		return err
	}
	decision, err := eng.Review(cmd.Context(), req, in.view)
	if err != nil {
		return err
	}
	if err := o.print(cmd, "", req, decision); err != nil {
		return err
	}
	if !decision.Allowed {
		return &ExitError{Code: ExitDenied}
	}
	return nil
}

// runManifest decides every object of -f as the API server would send it.
func (o *reviewOptions) runManifest(cmd *cobra.Command) error {
	if err := o.request.check(); err != nil {
		return err
	}
	in, err := o.load()
	if err != nil {
		return err
	}
	o.request.defaults = func(namespace string, obj map[string]any) { limitRangeDefaults(in.reg, in.view, namespace, obj) }
	o.request.clusterScoped = in.cat.ClusterScoped
	built, err := o.request.requests(cmd.InOrStdin())
	if err != nil {
		return err
	}
	eng, err := in.engine(cmd, o)
	if err != nil {
		return err
	}
	denied := false
	for _, b := range built {
		req, err := admission.Decode(b.review)
		if err != nil {
			return usageErrorf("%s: %v", b.object.at, err)
		}
		decision, err := eng.Review(cmd.Context(), req, in.view)
		if err != nil {
			return fmt.Errorf("%s: %w", b.object.at, err)
		}
		heading := b.object.describe() + inNamespace(o.request.namespaceOf(&b.object)) + ": "
		if err := o.print(cmd, heading, req, decision); err != nil {
			return err
		}
		denied = denied || !decision.Allowed
	}
	if denied {
		return &ExitError{Code: ExitDenied}
	}
	return nil
}

// reviewInputs are what every request is decided against.
type reviewInputs struct {
	cat  *catalog.Catalog
	reg  *registry.Snapshot
	view *clusterview.View
}

// load checks the flags and reads the library, the registry and the
// cluster objects.
func (o *reviewOptions) load() (*reviewInputs, error) {
	if o.output != "json" && o.output != "text" {
		return nil, usageErrorf("--output must be json or text, not %q", o.output)
	}
	if !slices.Contains(engine.Evaluators, o.evaluator) {
		return nil, usageErrorf("--evaluator must be one of %s, got %q", strings.Join(engine.Evaluators, ", "), o.evaluator)
	}
	cat, err := o.policy.load()
	if err != nil {
		return nil, err
	}
	reg, err := loadRegistry(o.registry, cat)
	if err != nil {
		var invalid *registry.Error
		if errors.As(err, &invalid) {
			return nil, &ExitError{Code: ExitUsage, Err: invalid}
		}
		return nil, err
	}
	view := clusterview.New(reg.TenantLabel())
	for _, file := range o.objects {
		objects, err := clusterview.LoadFile(file)
		if err != nil {
			return nil, usageErrorf("%v", err)
		}
		for _, obj := range objects {
			view.Upsert(obj)
		}
	}
	return &reviewInputs{cat: cat, reg: reg, view: view}, nil
}

// engine compiles the rules. As serve runs a --policy-dir: its own tests
// first, on the evaluator that decides.
func (in *reviewInputs) engine(cmd *cobra.Command, o *reviewOptions) (*engine.Engine, error) {
	return engine.New(cmd.Context(), in.reg, engine.Options{PolicyOptions: engine.PolicyOptions{Catalog: in.cat, Evaluator: o.evaluator, Test: o.policy.custom()}})
}

// print writes one decision in the -o format, dryrun violations on stderr;
// heading (Pod "web" in namespace "dev": ) names the object in text.
func (o *reviewOptions) print(cmd *cobra.Command, heading string, req *admission.Request, decision *admission.Decision) error {
	for _, v := range decision.DryRun {
		if _, err := fmt.Fprintf(cmd.ErrOrStderr(), "dryrun: %s%s\n", heading, v); err != nil {
			return err
		}
	}
	if o.output == "text" {
		return writeText(cmd.OutOrStdout(), heading, decision)
	}
	return writeJSON(cmd.OutOrStdout(), decision.Response(req.UID))
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

// readInput reads a file, or stdin for "-", whole: a cluster's objects
// piped from kubectl get run to many megabytes.
func readInput(stdin io.Reader, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

func writeJSON(w io.Writer, resp *admission.Response) error {
	out, err := resp.JSON()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", out)
	return err
}

// writeText prints a decision for people: the verdict after heading, every
// reason, and the patch.
func writeText(w io.Writer, heading string, d *admission.Decision) error {
	verdict := "allowed"
	if !d.Allowed {
		verdict = "denied"
	}
	lines := []string{heading + verdict}
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
