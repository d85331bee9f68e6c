package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tenantguard/tenantguard/internal/audit"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/registry"
)

type auditOptions struct {
	registry  string
	objects   []string
	output    string
	policy    policyFlag
	evaluator string
	managers  []string
	failOn    string
}

// Values of audit --fail-on: which rows make the exit status 1.
const (
	failOnAny  = "any"
	failOnDeny = "deny"
)

// auditReport is the output of `tenantguard audit -o json|yaml`.
type auditReport struct {
	// Objects is how many objects were audited.
	Objects    int         `json:"objects"`
	Violations []audit.Row `json:"violations"`
}

func newAuditCommand() *cobra.Command {
	var o auditOptions
	cmd := &cobra.Command{
		Use: "audit --registry FILE --objects FILE... [-o table|json|yaml]",
		Example: `  tenantguard audit --registry examples/registry.yaml --objects examples/cluster.yaml
  # what the registry in force says of the cluster as it is: every kind the
  # rules judge (leave out the kinds the cluster does not serve,
  # add the resources the registry's quotas count)
  kubectl get namespaces,pods,podtemplates,replicationcontrollers,deployments,statefulsets,daemonsets,replicasets,jobs,cronjobs,services,persistentvolumeclaims,ingresses -A -o yaml > cluster.yaml
  kubectl get gateways.gateway.networking.k8s.io,listenersets.gateway.networking.k8s.io,httproutes.gateway.networking.k8s.io,grpcroutes.gateway.networking.k8s.io,tlsroutes.gateway.networking.k8s.io -A -o yaml > gateway-api.yaml
  kubectl get xlistenersets.gateway.networking.x-k8s.io -A -o yaml > gateway-api-experimental.yaml
  kubectl get resourceclaims.resource.k8s.io -A -o yaml > claims.yaml
  kubectl get configmap -n tenantguard-system tenantguard-registry -o yaml > registry.yaml
  tenantguard audit --registry registry.yaml --objects cluster.yaml --objects gateway-api.yaml --objects gateway-api-experimental.yaml --objects claims.yaml
  # what a proposed registry would refuse of it
  tenantguard audit --registry proposed.yaml --objects cluster.yaml -o json | jq '.violations[] | select(.mode == "deny")'`,
		Short: "Check existing objects against a registry: what would this registry refuse of the cluster?",
		Long: `Check every existing object of the --objects files (multi-document YAML or
JSON, Lists, kubectl get -A -o yaml output as is) against the registry and the
rules, as if it were created now: a CREATE of the object as stored (less the
metadata the API server sets: resourceVersion, uid, managedFields,
creationTimestamp ...), decided as admission decides it, mutations first. The
files are the cluster too: ownership and counting see them, and an object
does not count against itself (a tenant exactly at its quota is not refused
what it holds).

The requester is the first owner of the tenant the object's namespace (or the
Namespace) is labelled for who is not an administrator (the first owner when
all are): a User by its name, a ServiceAccount by its user
name, a Group as a user "` + audit.GroupMember + `" in it; the first administrator for a
namespace of no known tenant; tenantguard itself (--manager) for the
companions it writes (labelled app.kubernetes.io/managed-by=tenantguard).

Audited: every Namespace, and the objects in tenant namespaces of the kinds an
audited rule judges and of the resources the registry counts; objects being
deleted are not. Rules about changes rather than objects (METADATA audit:
false: tenant-cordoned, namespace-deletion, managed-resource) are left out.

One row per violation: namespace, kind, name, rule, mode (the enforcement in
force) and message, sorted. Exit status: 1 when there is any row (with
--fail-on deny: any row in deny mode; rows in warn or dryrun mode are what
admission lets through), 0 when none, 2 bad input or usage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	cmd.Flags().StringVar(&o.registry, "registry", "", "tenant registry: ConfigMap manifest or TenantRegistry document (required)")
	cmd.Flags().StringArrayVar(&o.objects, "objects", nil, "the existing cluster objects (repeatable; required)")
	outputFlag(cmd, &o.output, "table", "table, json or yaml", "table", "json", "yaml")
	cmd.Flags().StringVar(&o.failOn, "fail-on", failOnAny, "which violations make the exit status 1: any, or deny (those of rules in deny mode only)")
	cmd.Flags().StringVar(&o.evaluator, "evaluator", engine.EvaluatorAuto, "how the rules run, as serve --evaluator: auto, plan or topdown")
	cmd.Flags().StringSliceVar(&o.managers, "manager", []string{engine.DefaultManager}, "user names of tenantguard itself, as serve --manager: its companions are audited as the first")
	o.policy.register(cmd.Flags())
	_ = cmd.MarkFlagRequired("registry")
	_ = cmd.MarkFlagRequired("objects")
	return cmd
}

func (o *auditOptions) run(cmd *cobra.Command) error {
	if !slices.Contains([]string{"table", "json", "yaml"}, o.output) {
		return usageErrorf("--output must be table, json or yaml, not %q", o.output)
	}
	if o.failOn != failOnAny && o.failOn != failOnDeny {
		return usageErrorf("--fail-on must be %s or %s, not %q", failOnAny, failOnDeny, o.failOn)
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
		return &ExitError{Code: ExitUsage, Err: err}
	}
	view := clusterview.New(reg.TenantLabel())
	var objects []audit.Object
	for _, file := range o.objects {
		read, err := readObjects(cmd.InOrStdin(), file)
		if err != nil {
			return err
		}
		for _, m := range read {
			obj, err := clusterview.FromManifest(m.object)
			if err != nil {
				return usageErrorf("%s: %v", m.at, err)
			}
			view.Upsert(obj)
			o, err := audit.FromMap(m.gvk, m.object)
			if err != nil {
				return usageErrorf("%s: %v", m.at, err)
			}
			objects = append(objects, o)
		}
	}
	if err := namespacesGiven(cmd.ErrOrStderr(), view, objects); err != nil {
		return err
	}
	eng, err := engine.New(cmd.Context(), reg, engine.Options{PolicyOptions: engine.PolicyOptions{Catalog: cat, Evaluator: o.evaluator, Test: o.policy.custom()}, Managers: o.managers})
	if err != nil {
		return err
	}
	auditor := audit.New(eng, view, o.managers)
	audited := 0
	for i := range objects {
		if auditor.Audits(&objects[i]) {
			audited++
		}
	}
	rows, err := auditor.All(cmd.Context(), objects)
	if err != nil {
		return err
	}
	if err := writeAudit(cmd.OutOrStdout(), o.output, auditReport{Objects: audited, Violations: rows}); err != nil {
		return err
	}
	failed := len(rows) > 0
	if o.failOn == failOnDeny {
		failed = audit.Denied(rows)
	}
	if failed {
		return &ExitError{Code: ExitDenied}
	}
	return nil
}

// namespacesGiven checks that the input holds the namespaces of its
// objects, whose labels name their tenants: an object in a namespace the
// input does not hold cannot be audited. With no Namespace at all (kubectl
// get pods,... without namespaces), it is a usage error, which would
// otherwise pass as a clean audit; with some missing, a warning.
func namespacesGiven(stderr io.Writer, view *clusterview.View, objects []audit.Object) error {
	missing := map[string]int{}
	namespaces := 0
	for i := range objects {
		switch o := &objects[i]; {
		case o.GVK.Group == "" && o.GVK.Kind == "Namespace":
			namespaces++
		case o.Namespace != "":
			if _, ok := view.NamespaceLabels(o.Namespace); !ok {
				missing[o.Namespace]++
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	skipped := 0
	for _, n := range missing {
		skipped += n
	}
	names := slices.Sorted(maps.Keys(missing))
	if len(names) > 5 {
		names = append(names[:5:5], fmt.Sprintf("%d more", len(missing)-5))
	}
	if namespaces == 0 {
		return usageErrorf("--objects holds no Namespace, so the tenant of its %d namespaced objects is unknown: list namespaces too (kubectl get namespaces,pods,... -A -o yaml)", skipped)
	}
	_, _ = fmt.Fprintf(stderr, "tenantguard: %s in namespaces --objects does not hold (%s) not audited: their tenant is unknown\n", counted(skipped, "object"), strings.Join(names, ", "))
	return nil
}

// readObjects reads the objects of one --objects file ("-" is stdin).
func readObjects(stdin io.Reader, file string) ([]manifestObject, error) {
	data, err := readInput(stdin, file)
	if err != nil {
		return nil, usageErrorf("reading objects: %v", err)
	}
	objects, err := readManifest(file, data)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return objects, nil
}

// writeAudit prints the rows in the -o format.
func writeAudit(w io.Writer, output string, report auditReport) error {
	if report.Violations == nil {
		report.Violations = []audit.Row{}
	}
	if output == "json" || output == "yaml" {
		return writeData(w, output, report)
	}
	return auditTable(w, report)
}

// auditTable prints a row per violation and a closing count.
func auditTable(w io.Writer, report auditReport) error {
	denied := 0
	for _, r := range report.Violations {
		if r.Mode == registry.ModeDeny {
			denied++
		}
	}
	if len(report.Violations) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, "NAMESPACE\tKIND\tNAME\tRULE\tMODE\tMESSAGE")
		for _, r := range report.Violations {
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", orDash(r.Namespace), r.Kind, r.Name, r.Rule, r.Mode, r.Message)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%s audited: %s, %d in deny mode\n", counted(report.Objects, "object"), counted(len(report.Violations), "violation"), denied)
	return err
}

// counted is n and noun, in the plural unless n is 1.
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// orDash is s, or "-" when empty (a cluster-scoped object's namespace).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
