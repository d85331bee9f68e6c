package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/tenantguard/tenantguard/webhook/admission"
)

const (
	hostNetworkPod = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: oil-dev}\nspec:\n  hostNetwork: true\n  containers: [{name: app, image: registry.example/app:1, imagePullPolicy: Always}]\n"
	plainPod       = "apiVersion: v1\nkind: Pod\nmetadata: {name: NAME}\nspec:\n  containers: [{name: app, image: registry.example/app:1, imagePullPolicy: Always}]\n"
	oilDev         = "apiVersion: v1\nkind: Namespace\nmetadata: {name: oil-dev, labels: {tenantguard.io/tenant: oil}}\n"
)

func TestReviewBuildsTheRequestFromAManifest(t *testing.T) {
	podList := "apiVersion: v1\nkind: PodList\nitems:\n" + indent(listItem(strings.Replace(plainPod, "NAME", "a", 1)), "  ") + indent(listItem(strings.Replace(plainPod, "NAME", "b", 1)), "  ")
	tests := []struct {
		name   string
		stdin  string
		args   []string // MANIFEST and OLD stand for files holding manifest and old
		files  map[string]string
		code   int
		stdout []string
		stderr string
	}{
		{
			name:   "a pod with hostNetwork created by alice is denied with the rule id",
			args:   []string{"-f", "MANIFEST", "--as", "alice"},
			files:  map[string]string{"MANIFEST": hostNetworkPod},
			code:   1,
			stdout: []string{`Pod "web" in namespace "oil-dev": denied`, "  deny   [host-network] "},
		},
		{
			name:   "a pod naming no resources takes its tenant's LimitRange defaults, as the API server gives them before any webhook",
			args:   []string{"-f", "MANIFEST", "--as", "alice"},
			files:  map[string]string{"MANIFEST": strings.Replace(plainPod, "{name: NAME}", "{name: plain, namespace: oil-dev}", 1)},
			code:   0,
			stdout: []string{`Pod "plain" in namespace "oil-dev": allowed`},
		},
		{
			name:   "a pod asking for more than its tenant's room across namespaces is refused with the sums",
			args:   []string{"-f", "MANIFEST", "--as", "alice"},
			files:  map[string]string{"MANIFEST": "apiVersion: v1\nkind: Pod\nmetadata: {name: big, namespace: oil-dev}\nspec:\n  containers: [{name: app, image: registry.example/app:1, imagePullPolicy: Always, resources: {requests: {cpu: '4'}}}]\n"},
			code:   1,
			stdout: []string{`deny   [tenant-resource-quota] tenant "oil" would use requests.cpu 7 of its 6; Pod "big" asks for 4 and 3 is in use across 2 namespaces; it may ask for at most 3, or the tenant's quota must be raised`},
		},
		{
			name:   "a namespace created by an owner gets the tenant-label patch",
			args:   []string{"-f", "MANIFEST", "--as", "alice"},
			files:  map[string]string{"MANIFEST": "apiVersion: v1\nkind: Namespace\nmetadata: {name: oil-new}\n"},
			code:   0,
			stdout: []string{`Namespace "oil-new": allowed`, `  patch  [{"op":"add","path":"/metadata/labels","value":{"tenantguard.io/tenant":"oil"}}]`},
		},
		{
			name:   "an owner of a group is one through --groups",
			args:   []string{"-f", "MANIFEST", "--as", "gina", "--groups", "gas-team,web"},
			files:  map[string]string{"MANIFEST": "apiVersion: v1\nkind: Namespace\nmetadata: {name: gas-new}\n"},
			code:   0,
			stdout: []string{`Namespace "gas-new": allowed`, `"tenantguard.io/tenant":"gas"`},
		},
		{
			name:   "an UPDATE without --old is refused with a clear message",
			args:   []string{"-f", "MANIFEST", "--as", "alice", "--operation", "UPDATE"},
			files:  map[string]string{"MANIFEST": oilDev},
			code:   2,
			stderr: "tenantguard: --operation UPDATE needs --old FILE: the objects as they are in the cluster, which the update changes",
		},
		{
			name:   "an UPDATE is judged against its object in --old",
			args:   []string{"-f", "MANIFEST", "--old", "OLD", "--as", "alice", "--operation", "update"},
			files:  map[string]string{"MANIFEST": strings.Replace(oilDev, "tenant: oil", "tenant: gas", 1), "OLD": oilDev},
			code:   1,
			stdout: []string{`Namespace "oil-dev": denied`, `[tenant-label-immutable] the label "tenantguard.io/tenant" of namespace "oil-dev" cannot be changed from "oil" to "gas"`},
		},
		{
			name:   "an UPDATE of an object --old lacks names the object and its line",
			args:   []string{"-f", "MANIFEST", "--old", "OLD", "--as", "alice", "--operation", "UPDATE"},
			files:  map[string]string{"MANIFEST": oilDev + "---\n" + hostNetworkPod, "OLD": oilDev},
			code:   2,
			stderr: `MANIFEST:5: Pod "web" in namespace "oil-dev" is not in --old OLD`,
		},
		{
			name:   "a DELETE judges the object as the old object",
			args:   []string{"-f", "MANIFEST", "--as", "alice", "--operation", "DELETE"},
			files:  map[string]string{"MANIFEST": oilDev},
			code:   1,
			stdout: []string{`Namespace "oil-dev": denied`, `[namespace-deletion] namespace "oil-dev" of tenant "oil" is protected from deletion`},
		},
		{
			name:   "a List gives one decision per item",
			args:   []string{"-f", "MANIFEST", "--as", "alice", "-n", "oil-dev"},
			files:  map[string]string{"MANIFEST": podList},
			code:   0,
			stdout: []string{`Pod "a" in namespace "oil-dev": allowed`, `Pod "b" in namespace "oil-dev": allowed`},
		},
		{
			name:   "the manifest can come from stdin, and one denied object of several exits 1",
			stdin:  strings.Replace(plainPod, "NAME", "a", 1) + "---\n" + hostNetworkPod,
			args:   []string{"-f", "-", "--as", "alice", "--namespace", "oil-dev"},
			code:   1,
			stdout: []string{`Pod "a" in namespace "oil-dev": allowed`, `Pod "web" in namespace "oil-dev": denied`},
		},
		{
			name:   "an object without a kind names the file and line",
			stdin:  oilDev + "---\napiVersion: v1\nmetadata: {name: b}\n",
			args:   []string{"-f", "-", "--as", "alice"},
			code:   2,
			stderr: "tenantguard: <stdin>:5: an object needs apiVersion, kind and metadata.name (or generateName)",
		},
		{
			name:   "an object named by the API server from its generateName is decided by that prefix",
			stdin:  strings.Replace(hostNetworkPod, "name: web", "generateName: web-", 1),
			args:   []string{"-f", "-", "--as", "alice", "--namespace", "oil-dev"},
			code:   1,
			stdout: []string{`Pod "web-*" in namespace "oil-dev": denied`, `hostNetwork of Pod "web-*" is not allowed`},
		},
		{
			name:   "an update needs the object's name",
			stdin:  strings.Replace(hostNetworkPod, "name: web", "generateName: web-", 1),
			args:   []string{"-f", "-", "--as", "alice", "--namespace", "oil-dev", "--operation", "DELETE"},
			code:   2,
			stderr: `has a generateName and no name, which only a CREATE takes: a DELETE names an existing object`,
		},
		{
			name:   "a YAML syntax error names the file and line",
			args:   []string{"-f", "MANIFEST", "--as", "alice"},
			files:  map[string]string{"MANIFEST": oilDev + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: b\n"},
			code:   2,
			stderr: "MANIFEST:7: not YAML: did not find expected ',' or '}'",
		},
		{
			name:   "-f needs --as",
			args:   []string{"-f", "MANIFEST"},
			files:  map[string]string{"MANIFEST": oilDev},
			code:   2,
			stderr: "tenantguard: -f needs --as USER",
		},
		{
			name:   "--old is refused for a CREATE",
			args:   []string{"-f", "MANIFEST", "--old", "MANIFEST", "--as", "alice"},
			files:  map[string]string{"MANIFEST": oilDev},
			code:   2,
			stderr: "tenantguard: --old is only for --operation UPDATE",
		},
		{
			name:   "-f and an AdmissionReview are refused together",
			args:   []string{"-f", "MANIFEST", "--as", "alice", examples("requests/pod-allowed.yaml")},
			files:  map[string]string{"MANIFEST": oilDev},
			code:   2,
			stderr: "or an AdmissionReview, not both (got",
		},
		{
			name:   "--as without -f is refused",
			args:   []string{"--as", "alice", examples("requests/pod-allowed.yaml")},
			code:   2,
			stderr: "tenantguard: --as: only with -f MANIFEST",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"review", "-o", "text", "--registry", examples("registry.yaml"), "--objects", examples("cluster.yaml")}
			stderr := tt.stderr
			for _, arg := range tt.args {
				if text, ok := tt.files[arg]; ok {
					file := writeFile(t, strings.ToLower(arg)+".yaml", text)
					stderr = strings.ReplaceAll(stderr, arg, file)
					arg = file
				}
				args = append(args, arg)
			}
			r := run(t, tt.stdin, args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, want := range tt.stdout {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
				}
			}
			if stderr != "" && (!strings.Contains(r.stderr, stderr) || strings.Count(r.stderr, "\n") != 1) {
				t.Errorf("stderr %q, want one line with %q", r.stderr, stderr)
			}
		})
	}
}

// TestTheDocumentedManifestDecidesAsDocumented: docs/cli.md's example.
func TestTheDocumentedManifestDecidesAsDocumented(t *testing.T) {
	r := run(t, "", "review", "-o", "text", "--registry", examples("registry.yaml"), "--objects", examples("cluster.yaml"), "-f", examples("manifests/web.yaml"), "--as", "alice")
	doc := mustRead(t, filepath.Join("..", "..", "docs", "cli.md"))
	if r.code != 1 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for line := range strings.Lines(r.stdout) {
		if !strings.HasPrefix(line, "  patch ") && !strings.Contains(doc, line) {
			t.Errorf("docs/cli.md lacks the line %q", line)
		}
	}
}

func listItem(doc string) string {
	return "- " + strings.ReplaceAll(strings.TrimSuffix(doc, "\n"), "\n", "\n  ") + "\n"
}

func TestReviewOfAManifestPrintsOneResponsePerObjectAsJSON(t *testing.T) {
	manifest := writeFile(t, "m.yaml", strings.Replace(plainPod, "NAME", "a", 1)+"---\n"+hostNetworkPod)
	r := run(t, "", "review", "--registry", examples("registry.yaml"), "--objects", examples("cluster.yaml"), "-n", "oil-dev", "-f", manifest, "--as", "alice")
	if r.code != 1 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var allowed []bool
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	for {
		var review admissionv1.AdmissionReview
		err := dec.Decode(&review)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || review.Response == nil || review.Response.UID == "" {
			t.Fatalf("not a stream of AdmissionReview responses (%v):\n%s", err, r.stdout)
		}
		allowed = append(allowed, review.Response.Allowed)
	}
	if !slices.Equal(allowed, []bool{true, false}) {
		t.Errorf("allowed %v, want [true false]", allowed)
	}
}

// TestTheBuiltRequestIsTheAPIServers: the fields the API server fills, as
// the webhook would decode them.
func TestTheBuiltRequestIsTheAPIServers(t *testing.T) {
	tests := []struct {
		name      string
		opts      requestOptions
		manifest  string
		namespace string // of the request and the object
		resource  string
		groups    []string
		object    bool // the object is request.object (else oldObject only)
	}{
		{"a pod without a namespace goes to default", requestOptions{user: "alice", operation: "CREATE"}, strings.Replace(plainPod, "NAME", "a", 1), "default", "pods", []string{"system:authenticated"}, true},
		{"--namespace places an object that names none", requestOptions{user: "alice", groups: []string{"dev"}, operation: "CREATE", namespace: "oil-dev"}, strings.Replace(plainPod, "NAME", "a", 1), "oil-dev", "pods", []string{"dev", "system:authenticated"}, true},
		{"the object's own namespace wins over --namespace", requestOptions{user: "alice", operation: "CREATE", namespace: "x"}, hostNetworkPod, "oil-dev", "pods", []string{"system:authenticated"}, true},
		{"a service account has its groups", requestOptions{user: "system:serviceaccount:oil-ci:deployer", operation: "CREATE"}, "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: g, namespace: oil-dev}\n", "oil-dev", "gateways", []string{"system:serviceaccounts", "system:serviceaccounts:oil-ci", "system:authenticated"}, true},
		{"a cluster-scoped kind has no namespace", requestOptions{user: "alice", operation: "CREATE", namespace: "x"}, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\nvalue: 1\n", "", "priorityclasses", []string{"system:authenticated"}, true},
		{"a DELETE carries the object as oldObject only", requestOptions{user: "alice", operation: "DELETE"}, hostNetworkPod, "oil-dev", "pods", []string{"system:authenticated"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.manifest = writeFile(t, "m.yaml", tt.manifest)
			built, err := tt.opts.requests(bytes.NewReader(nil))
			if err != nil || len(built) != 1 {
				t.Fatalf("%d requests, %v", len(built), err)
			}
			req, err := admission.Decode(built[0].review)
			if err != nil {
				t.Fatal(err)
			}
			if req.Namespace != tt.namespace || req.Resource.Resource != tt.resource || req.UID == "" || req.DryRun == nil || *req.DryRun || !slices.Equal(req.UserInfo.Groups, tt.groups) {
				t.Errorf("request %+v", req.AdmissionRequest)
			}
			obj := req.Object
			if !tt.object {
				if obj != nil {
					t.Errorf("a DELETE has an object")
				}
				obj = req.OldObject
			}
			if obj == nil {
				t.Fatal("no object")
			}
			if ns := obj.Get(ast.StringTerm("metadata")); tt.namespace != "" && !strings.Contains(ns.String(), `"namespace": "`+tt.namespace+`"`) {
				t.Errorf("the object's metadata %v lacks namespace %q", ns, tt.namespace)
			}
		})
	}
}

// TestReviewCreatesAClusterScopedKindOfALibraryInNoNamespace: a kind of
// another API that a rule family declares with scope: Cluster is sent in no
// namespace, as the API server sends it, not in --namespace's or default.
func TestReviewCreatesAClusterScopedKindOfALibraryInNoNamespace(t *testing.T) {
	for _, tt := range []struct{ scope, want string }{
		{", scope: Cluster", `[no-cacti] a cactus in namespace ""`},
		{"", `[no-cacti] a cactus in namespace "default"`},
	} {
		overlay := t.TempDir()
		rule := "# METADATA\n# title: Cacti\n# description: No cacti.\n# custom:\n#   kinds: [{kind: example.com/Cactus, resource: cacti" + tt.scope + "}]\n#   operations: [CREATE]\n#   engines: [opa]\npackage tenantguard.rules.cacti\n\n" +
			"# METADATA\n# title: No cacti\n# description: No cacti.\n# custom:\n#   id: no-cacti\nviolations contains {\"id\": \"no-cacti\", \"msg\": sprintf(\"a cactus in namespace %q\", [object.get(input.request, \"namespace\", \"\")])}\n"
		if err := os.WriteFile(filepath.Join(overlay, "cacti.rego"), []byte(rule), 0o600); err != nil {
			t.Fatal(err)
		}
		r := run(t, "apiVersion: example.com/v1\nkind: Cactus\nmetadata: {name: prickly}\n", "review", "--policy-overlay", overlay, "--registry", examples("registry.yaml"), "-f", "-", "--as", "alice", "-o", "text")
		if r.code != ExitDenied || !strings.Contains(r.stdout, tt.want) {
			t.Errorf("scope %q: exit %d, stdout %q, stderr %q; want %q", tt.scope, r.code, r.stdout, r.stderr, tt.want)
		}
	}
}
