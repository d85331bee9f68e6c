package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/webhook/configuration"
)

// embeddedEngine names tenantguard's own engine in the rules' engines: it
// decides every rule.
const embeddedEngine = "tenantguard"

// ruleView is one rule as `tenantguard rules` shows it.
type ruleView struct {
	ID          string   `json:"id"`
	Family      string   `json:"family"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Kinds       []string `json:"kinds"`
	// Subresources are the subresources the rule sees its kinds change through.
	Subresources []string `json:"subresources,omitempty"`
	Operations   []string `json:"operations"`
	// KindOperations are the fewer operations in which the rule sees some
	// of its kinds, by kind.
	KindOperations map[string][]string `json:"kindOperations,omitempty"`
	Mutates        bool                `json:"mutates"`
	// Audit is false for a rule the audit leaves out (METADATA custom:
	// audit: false): one about the change itself, not the object.
	Audit bool `json:"audit"`
	// Enforcement is the mode in force: the registry's when --registry
	// sets one, else the rule's default.
	Enforcement string   `json:"enforcement"`
	Engines     []string `json:"engines"`
	// NotCovered says why the engines the rule does not claim leave it out.
	NotCovered string `json:"notCovered,omitempty"`
	Location   string `json:"location"`
}

// rulesView is the output of `tenantguard rules -o json|yaml`.
type rulesView struct {
	// Library is "embedded" or the --policy-dir.
	Library  string     `json:"library"`
	Revision string     `json:"revision"`
	Rules    []ruleView `json:"rules"`
}

func newRulesCommand() *cobra.Command {
	var policy policyFlag
	var registryFile, output string
	cmd := &cobra.Command{
		Use: "rules [--policy-dir DIR] [--policy-overlay DIR] [--registry FILE] [-o table|json|yaml|markdown|webhook-rules]",
		Example: `  tenantguard rules
  tenantguard rules --registry examples/registry.yaml -o json
  tenantguard rules --policy-overlay my-families/ -o webhook-rules > webhook-rules.yaml`,
		Short: "List the rules in force: id, family, kinds, operations, engines, enforcement",
		Long: `List the rules of the embedded rule library, or of --policy-dir, and of
--policy-overlay, as their METADATA declares them: each rule's id, family, the kinds and operations it
judges, whether it mutates, whether the audit (tenantguard audit and serve's
background audit) checks it (audit: false in its METADATA leaves it out), its
enforcement (the rule's default, or the registry's with --registry) and the
engines that cover it (tenantguard itself always; the OPA bundle, Gatekeeper, Kyverno and ValidatingAdmissionPolicy when
the rule claims them).

-o markdown writes docs/rules.md; -o webhook-rules writes the resources and
operations the webhooks must see, which the Helm chart renders its webhook
configurations from (value webhook.rules for a --policy-dir or --policy-overlay).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cat, err := policy.load()
			if err != nil {
				return err
			}
			view := rulesView{Library: policy.name(), Revision: cat.Revision()}
			enforcement := map[string]string{}
			if registryFile != "" {
				snap, err := loadRegistry(registryFile, cat)
				if err != nil {
					return &ExitError{Code: ExitUsage, Err: err}
				}
				enforcement = snap.Registry().Settings.Enforcement
			}
			for _, r := range cat.Rules() {
				view.Rules = append(view.Rules, viewOf(r, enforcement[r.ID]))
			}
			out := cmd.OutOrStdout()
			switch output {
			case "table":
				return rulesTable(out, cat, view.Rules)
			case "json", "yaml":
				return writeData(out, output, view)
			case "markdown":
				return rulesMarkdown(out, cat, view.Rules)
			case "webhook-rules":
				raw, err := configuration.Document(cat)
				if err != nil {
					return err
				}
				_, err = out.Write(raw)
				return err
			}
			return usageErrorf("--output must be table, json, yaml, markdown or webhook-rules, not %q", output)
		},
	}
	policy.register(cmd.Flags())
	cmd.Flags().StringVar(&registryFile, "registry", "", "a tenant registry whose settings.enforcement gives the modes in force")
	outputFlag(cmd, &output, "table", "table, json, yaml, markdown (the docs' rules table) or webhook-rules (the chart's routes)", "table", "json", "yaml", "markdown", "webhook-rules")
	return cmd
}

// viewOf is a rule as listed, in the mode the registry sets ("" for none).
func viewOf(r catalog.Rule, mode string) ruleView {
	v := ruleView{
		ID: r.ID, Family: r.Family, Title: r.Title, Description: strings.Join(strings.Fields(r.Description), " "),
		Kinds: r.KindKeys(), Operations: r.Operations, Mutates: r.Mutates, Audit: r.Audit,
		Enforcement: r.Enforcement, Engines: append([]string{embeddedEngine}, r.Engines...),
		Location: r.Location,
	}
	if mode != "" {
		v.Enforcement = mode
	}
	for _, k := range r.Kinds {
		v.Subresources = append(v.Subresources, k.Subresources...)
		if k.Operations != nil {
			if v.KindOperations == nil {
				v.KindOperations = map[string][]string{}
			}
			v.KindOperations[k.Key()] = k.Operations
		}
	}
	var reasons []string
	if missing := slices.DeleteFunc([]string{catalog.EngineOPA, catalog.EngineGatekeeper}, r.Claims); len(missing) > 0 {
		reasons = append(reasons, strings.Join(missing, ", ")+": not claimed")
	}
	if !r.Claims(catalog.EngineKyverno) {
		reasons = append(reasons, "kyverno, vap: "+r.NotExpressible)
	}
	v.NotCovered = strings.Join(reasons, "; ")
	return v
}

// rulesTable is the listing for people.
func rulesTable(w io.Writer, cat *catalog.Catalog, rules []ruleView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "RULE\tFAMILY\tKINDS\tOPERATIONS\tMUTATES\tAUDITED\tENFORCEMENT\tENGINES")
	for _, r := range rules {
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%v\t%s\t%s\n", r.ID, r.Family, kindsText(cat, r.Kinds), operationsText(r, ",", "(%s:%s)"), r.Mutates, r.Audit, r.Enforcement, strings.Join(r.Engines, ","))
	}
	return tw.Flush()
}

// kindsText names the library's kind sets a rule judges whole (pod-carriers)
// instead of their kinds.
func kindsText(cat *catalog.Catalog, kinds []string) string {
	var sets []string
	for _, name := range cat.KindSets() {
		var keys []string
		for _, k := range cat.KindSet(name) {
			keys = append(keys, k.Key())
		}
		if len(keys) > 0 && containsAll(kinds, keys) {
			kinds = slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return slices.Contains(keys, k) })
			sets = append(sets, name)
		}
	}
	return strings.Join(append(sets, kinds...), ",")
}

// operationsText is the rule's operations joined by sep, then each kind
// that sees fewer of them with its own, by narrowed (a format of the
// kind and its operations: the table's holds no space, which would split
// its columns).
func operationsText(r ruleView, sep, narrowed string) string {
	text := strings.Join(r.Operations, sep)
	for _, k := range slices.Sorted(maps.Keys(r.KindOperations)) {
		text += fmt.Sprintf(narrowed, k, strings.Join(r.KindOperations[k], sep))
	}
	return text
}

func containsAll(s, subset []string) bool {
	for _, x := range subset {
		if !slices.Contains(s, x) {
			return false
		}
	}
	return true
}

// rulesMarkdown writes docs/rules.md: a table of every rule, then each
// rule's description.
func rulesMarkdown(w io.Writer, cat *catalog.Catalog, rules []ruleView) error {
	var b strings.Builder
	b.WriteString(`# Rules

Generated by ` + "`tenantguard rules -o markdown`" + ` (` + "`make generate`" + `) from the rule library's
METADATA; do not edit. Each rule is declared once, in the ` + "`# METADATA`" + ` of its family's
Rego under ` + "`rego/tenantguard/rules/`" + `: see [adding-a-rule.md](adding-a-rule.md).
` + kindSetsText(cat) + "`counted`" + ` is every resource the registry's ` + "`quotas`" + ` count; ` + "`all`" + ` is every
namespaced kind in tenant namespaces (see [webhook.md](webhook.md)). Engines: ` + "`tenantguard`" + ` is the
admission server and ` + "`review`" + `, ` + "`opa`" + ` the exported OPA bundle, then Gatekeeper, Kyverno and
ValidatingAdmissionPolicy (` + "`vap`" + `).

| rule | family | kinds | operations | mutates | default | engines |
| --- | --- | --- | --- | --- | --- | --- |
`)
	for _, r := range rules {
		mutates := ""
		if r.Mutates {
			mutates = "yes"
		}
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s | %s | %s | %s |\n", r.ID, r.ID, r.Family, codeList(strings.Split(kindsText(cat, r.Kinds), ",")), operationsText(r, ", ", " (`%s`: %s)"), mutates, r.Enforcement, strings.Join(r.Engines, ", "))
	}
	for _, r := range rules {
		fmt.Fprintf(&b, "\n## %s\n\n", r.ID)
		if r.Title != "" {
			fmt.Fprintf(&b, "**%s.** ", r.Title)
		}
		b.WriteString(strings.Join(strings.Fields(r.Description), " "))
		file, _, _ := strings.Cut(r.Location, ":")
		fmt.Fprintf(&b, "\n\nDeclared in `%s`.", file)
		if len(r.Subresources) > 0 {
			fmt.Fprintf(&b, " Also sees %s.", codeList(r.Subresources))
		}
		if r.NotCovered != "" {
			fmt.Fprintf(&b, " Not covered by %s.", r.NotCovered)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// kindSetsText says what each kind set of the library is, for rules.md.
func kindSetsText(cat *catalog.Catalog) string {
	var b strings.Builder
	for _, name := range cat.KindSets() {
		fmt.Fprintf(&b, "`%s` is %s (`%s`);\n", name, strings.ToLower(cat.KindSetTitle(name)[:1])+cat.KindSetTitle(name)[1:], cat.KindSetRule(name))
	}
	return b.String()
}

func codeList(items []string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = "`" + s + "`"
	}
	return strings.Join(out, ", ")
}
