package cli

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestVersionPrintsJSONAndAnswersTheFlag(t *testing.T) {
	r := run(t, "", "version", "-o", "json")
	var info versionInfo
	if err := json.Unmarshal([]byte(r.stdout), &info); r.code != 0 || err != nil || info.Version != Version || info.Go == "" || info.Platform == "" {
		t.Errorf("version -o json: exit %d, %q (%v)", r.code, r.stdout, err)
	}
	if r := run(t, "", "--version"); r.code != 0 || !strings.HasPrefix(r.stdout, "tenantguard "+Version+" (") {
		t.Errorf("--version: exit %d, %q", r.code, r.stdout)
	}
	if r := run(t, "", "version", "-o", "yaml"); r.code != ExitUsage {
		t.Errorf("version -o yaml: exit %d, want %d", r.code, ExitUsage)
	}
}

func TestRegistryValidateReadsStdinAndPrintsJSON(t *testing.T) {
	valid := mustRead(t, examples("registry.yaml"))
	tests := []struct {
		name     string
		stdin    string
		args     []string
		code     int
		valid    bool
		problems int
		file     string
	}{
		{"a valid registry on stdin", valid, []string{"-"}, 0, true, 0, "<stdin>"},
		{"an invalid registry on stdin names stdin and the line", "apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants: [{name: a}, {name: a}]\n", []string{"-"}, 1, false, 1, "<stdin>"},
		{"a file", "", []string{examples("registry.yaml")}, 0, true, 0, examples("registry.yaml")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.stdin, append([]string{"registry", "validate", "-o", "json"}, tt.args...)...)
			var v validation
			if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != tt.code {
				t.Fatalf("exit %d, %q %q (%v)", r.code, r.stdout, r.stderr, err)
			}
			if v.Valid != tt.valid || len(v.Problems) != tt.problems || v.File != tt.file {
				t.Errorf("got %+v", v)
			}
			if !tt.valid && (v.Problems[0].File != tt.file || v.Problems[0].Line != 3) {
				t.Errorf("problem %+v, want %s:3", v.Problems[0], tt.file)
			}
		})
	}
	if r := run(t, valid, "registry", "validate", "-"); r.code != 0 || !strings.HasPrefix(r.stdout, "<stdin>: valid registry with 2 tenants") {
		t.Errorf("text from stdin: exit %d, %q", r.code, r.stdout)
	}
}

// TestEveryCommandHasExamples: every runnable command's help shows how it
// is used.
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.Example == "" && c.Name() != "help" && c.Name() != "completion" && c.Parent() != nil && c.Parent().Name() != "completion" {
			t.Errorf("%q has no Example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand(nil, nil, nil))
}

// TestOutputFlagValuesComplete: -o completes to its formats.
func TestOutputFlagValuesComplete(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"version", []string{"version", "-o", ""}, []string{"text", "json"}},
		{"review", []string{"review", "-o", ""}, []string{"json", "text"}},
		{"rules", []string{"rules", "-o", ""}, []string{"table", "json", "yaml", "markdown", "webhook-rules"}},
		{"registry validate", []string{"registry", "validate", "-o", ""}, []string{"text", "json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", append([]string{cobra.ShellCompRequestCmd}, tt.args...)...)
			got := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if len(got) != len(tt.want)+1 || strings.Join(got[:len(tt.want)], ",") != strings.Join(tt.want, ",") {
				t.Errorf("completions %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWebhookCheckJudgesTheAnswer(t *testing.T) {
	gr := schema.GroupResource{Resource: "namespaces"}
	denied := apierrors.NewForbidden(gr, "x", errors.New(`admission webhook "namespaces.tenantguard.io" denied the request: [namespace-ownership] nobody owns no tenant`))
	tests := []struct {
		name string
		err  error
		want string // "" for a passed check
	}{
		{"tenantguard's denial passes", denied, ""},
		{"an allowed dry-run fails", nil, "the dry-run was allowed"},
		{"an RBAC refusal fails", apierrors.NewForbidden(gr, "x", errors.New(`User "nobody" cannot create resource "namespaces"`)), "not by tenantguard's [namespace-ownership]"},
		{"an unreachable webhook fails", errors.New(`Internal error occurred: failed calling webhook "namespaces.tenantguard.io": connection refused`), "could not call tenantguard"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := judgeWebhookCheck(tt.err)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// TestTypeErrorsNameTheFieldPath: a value of the wrong type in a registry is
// reported at its line with its field path, in the registry's words, never
// the decoder's Go type names.
func TestTypeErrorsNameTheFieldPath(t *testing.T) {
	head := "apiVersion: tenantguard.io/v1\nkind: TenantRegistry\n"
	tests := []struct {
		name     string
		registry string
		want     string
	}{
		{"a word for a count", head + "tenants:\n  - name: a\n    quotas: {pods: ten}\n", `:5: tenants[0].quotas.pods: expected a whole number, got "ten"`},
		{"a list for a count", head + "tenants:\n  - name: a\n    namespaceQuota: [3]\n", `:5: tenants[0].namespaceQuota: expected a whole number, got a list`},
		{"a word for a switch", head + "settings:\n  forceTenantPrefix: yes please\n", `:4: settings.forceTenantPrefix: expected true or false, got "yes please"`},
		{"a mapping for a list", head + "tenants:\n  - name: a\n    owners: {kind: User, name: u}\n", `:5: tenants[0].owners: expected a list, got a mapping`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, "registry.yaml", tt.registry)
			r := run(t, "", "registry", "validate", file)
			if r.code != 1 || !strings.Contains(r.stdout+r.stderr, file+tt.want) {
				t.Fatalf("exit %d, want %q in:\n%s%s", r.code, file+tt.want, r.stdout, r.stderr)
			}
			for _, goName := range []string{"int64", "!!str", "!!seq", "!!map", "unmarshal", "[]registry."} {
				if strings.Contains(r.stdout+r.stderr, goName) {
					t.Errorf("the message names %q:\n%s%s", goName, r.stdout, r.stderr)
				}
			}
		})
	}
}

// TestReviewNamesTheFileInItsErrors: a request or objects file that does
// not decode is named, with the line of a YAML syntax error and the field
// path of a type error.
func TestReviewNamesTheFileInItsErrors(t *testing.T) {
	review := "apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\nrequest:\n  uid: x\n"
	namespace := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n"
	tests := []struct {
		name    string
		request string // file text, or stdin when stdin is set
		stdin   bool
		objects string
		want    string // FILE stands for the file's path
	}{
		{"a YAML syntax error in the request names its line", review + "  kind: {group: '', version: v1, kind: Pod\n  operation: CREATE\n", false, "", "FILE:5: not YAML: did not find expected ',' or '}'"},
		{"a request that is no AdmissionReview names the file", review + "  operation: [CREATE]\n", false, "", "FILE: bad AdmissionReview"},
		{"a request on stdin is <stdin>", "apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\nrequest: {uid: 5}\n", true, "", "<stdin>: bad AdmissionReview: not an AdmissionReview: request.uid is number, not a string"},
		{"a YAML syntax error in the objects names its line", review, false, namespace + "---\n" + namespace + "  labels: {a: [x}\n", "OBJECTS:10: did not find expected ',' or ']'"},
		{"a type error in the objects names the field path", review, false, namespace + "  labels: [x]\n", "OBJECTS: document 1: metadata.labels: expected a mapping, got a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"review", "--registry", examples("registry.yaml")}
			want := tt.want
			if tt.objects != "" {
				objects := writeFile(t, "objects.yaml", tt.objects)
				args = append(args, "--objects", objects)
				want = strings.ReplaceAll(want, "OBJECTS", objects)
			}
			stdin := ""
			if tt.stdin {
				stdin = tt.request
			} else {
				file := writeFile(t, "request.yaml", tt.request)
				args = append(args, file)
				want = strings.ReplaceAll(want, "FILE", file)
			}
			r := run(t, stdin, args...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, want) {
				t.Fatalf("exit %d, stderr %q; want %q", r.code, r.stderr, want)
			}
		})
	}
}

// TestRegistrySyntaxErrorsPointAtTheLine: the line of a YAML syntax error
// is the file's, in a bare document and in a ConfigMap's tenants.yaml.
func TestRegistrySyntaxErrorsPointAtTheLine(t *testing.T) {
	doc := "apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: a\n    owners: [{kind: User, name: u}\n  - name: b\n"
	configMap := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: r}\ndata:\n  tenants.yaml: |\n" + indent(doc, "    ")
	for _, tt := range []struct {
		name, text string
		line       string
	}{
		{"An unclosed list in a bare document", doc, ":5: did not find expected ',' or ']'"},
		{"An unclosed list in a ConfigMap's document", configMap, ":10: did not find expected ',' or ']'"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, "registry.yaml", tt.text)
			if r := run(t, "", "registry", "validate", file); r.code != 1 || !strings.Contains(r.stdout, file+tt.line) {
				t.Fatalf("exit %d, want %q in:\n%s%s", r.code, file+tt.line, r.stdout, r.stderr)
			}
		})
	}
}

func indent(text, prefix string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		b.WriteString(prefix + line)
	}
	return b.String()
}

// TestServeLogsFatalErrorsAsJSON: an error that stops serve, a flag error
// included, is one of its JSON log lines too.
func TestServeLogsFatalErrorsAsJSON(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"A refused flag value", []string{"serve", "--registry-configmap", "x", "--tls-cert-file", "a", "--tls-private-key-file", "b"}, `--registry-configmap must be NAMESPACE/NAME, got "x"`},
		{"An unknown flag", []string{"serve", "--nope"}, "unknown flag: --nope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", tt.args...)
			first, _, _ := strings.Cut(r.stderr, "\n")
			var line struct {
				Level, Msg, Error string
				ExitCode          int
			}
			if err := json.Unmarshal([]byte(first), &line); err != nil || line.Level != "ERROR" || line.Error != tt.want || line.ExitCode != ExitUsage {
				t.Fatalf("first line %q (%v), want a JSON error line with %q", first, err, tt.want)
			}
			if !strings.Contains(r.stderr, "\ntenantguard: "+tt.want+"\n") {
				t.Errorf("no plain line after it:\n%s", r.stderr)
			}
		})
	}
	if r := run(t, "", "review", "--nope"); strings.HasPrefix(r.stderr, "{") {
		t.Errorf("another command logged JSON: %q", r.stderr)
	}
}
