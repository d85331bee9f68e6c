package catalog_test

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/rego"
	"github.com/tenantguard/tenantguard/tests/fixtures"
)

// specRules are the rule ids of SPEC.md sections 3 and 8.2 built so far,
// which the embedded library must declare.
var specRules = []string{
	"namespace-ownership", "namespace-prefix", "protected-namespace", "namespace-quota",
	"tenant-label-immutable", "protected-metadata",
	"host-path", "host-network", "host-namespaces", "host-ports", "privileged",
	"priority-class", "storage-class", "service-type", "external-ips",
	"tenant-quota", "managed-resource",
	"image-registry", "image-pull-policy", "runtime-class", "node-placement",
	"ingress-class", "gateway-class", "hostname", "tenant-cordoned", "namespace-deletion",
	"hostname-collision", "tenant-resource-quota",
}

func TestTheEmbeddedLibraryDeclaresEveryRuleOfTheSpec(t *testing.T) {
	c := catalog.MustEmbedded()
	if got := slices.Sorted(slices.Values(c.IDs())); !slices.Equal(got, slices.Sorted(slices.Values(specRules))) {
		t.Errorf("rules %v, want %v", got, specRules)
	}
	for _, r := range c.Rules() {
		if len(r.Kinds) == 0 && !r.Counted && !r.All || len(r.Operations) == 0 || r.Title == "" || r.Description == "" {
			t.Errorf("%s is declared without kinds, operations, a title or a description: %+v", r.ID, r)
		}
		if !r.Claims(catalog.EngineOPA) || !r.Claims(catalog.EngineGatekeeper) {
			t.Errorf("%s does not claim the OPA bundle and Gatekeeper, which run the library itself", r.ID)
		}
	}
}

func TestThePodCarriersAreOneKindSet(t *testing.T) {
	c := catalog.MustEmbedded()
	var keys []string
	for _, k := range c.KindSet("pod-carriers") {
		keys = append(keys, k.Key()+"="+k.Resource+strings.Join(k.Subresources, ""))
	}
	want := []string{
		"Pod=podspods/ephemeralcontainers", "PodTemplate=podtemplates", "ReplicationController=replicationcontrollers",
		"apps/DaemonSet=daemonsets", "apps/Deployment=deployments", "apps/ReplicaSet=replicasets", "apps/StatefulSet=statefulsets",
		"batch/CronJob=cronjobs", "batch/Job=jobs",
	}
	if !slices.Equal(keys, want) {
		t.Errorf("pod carriers %v, want %v", keys, want)
	}
	r, _ := c.Rule("storage-class")
	if len(r.Kinds) != len(want)+1 {
		t.Errorf("storage-class judges %v: the pod carriers and claims", r.KindKeys())
	}
}

func TestRoutesComeFromTheDeclarations(t *testing.T) {
	routes := catalog.MustEmbedded().Data()["routes"].(map[string]any)
	carrier := []any{"images", "lifecycle", "nodes", "pods", "priority", "quota", "runtime", "storage"}
	pod := []any{"images", "lifecycle", "nodes", "pods", "priority", "quota", "resources", "runtime", "storage"}
	edge := []any{"collision", "ingress", "lifecycle", "quota"}
	gateway := []any{"ingress", "lifecycle", "quota"}
	managed := []any{"lifecycle", "managed", "quota"}
	want := map[string]any{
		"validate": map[string]any{
			"*": []any{"lifecycle", "quota"}, "Namespace": []any{"lifecycle", "namespaces", "quota"}, "Service": []any{"lifecycle", "quota", "services"},
			"PersistentVolumeClaim": []any{"lifecycle", "quota", "resources", "storage"},
			"ResourceQuota":         managed, "LimitRange": managed,
			"networking.k8s.io/NetworkPolicy": managed, "rbac.authorization.k8s.io/RoleBinding": managed,
			"networking.k8s.io/Ingress": edge, "gateway.networking.k8s.io/Gateway": gateway, "gateway.networking.k8s.io/HTTPRoute": edge,
			"gateway.networking.k8s.io/GRPCRoute": edge, "gateway.networking.k8s.io/TLSRoute": edge, "gateway.networking.k8s.io/ListenerSet": edge,
			"gateway.networking.x-k8s.io/XListenerSet": edge,
			"Pod": pod, "PodTemplate": carrier, "ReplicationController": carrier, "apps/ReplicaSet": carrier, "apps/Deployment": carrier,
			"apps/StatefulSet": carrier, "apps/DaemonSet": carrier, "batch/Job": carrier, "batch/CronJob": carrier,
			"resource.k8s.io/ResourceClaim": []any{"lifecycle", "quota", "resources"},
		},
	}
	if got := routes["validate"]; !reflect.DeepEqual(got, want["validate"]) {
		t.Errorf("validate routes\n got %v\nwant %v", got, want["validate"])
	}
	mutate := routes["mutate"].(map[string]any)
	if !reflect.DeepEqual(mutate["Pod"], []any{"nodes", "priority", "runtime", "storage"}) || !reflect.DeepEqual(mutate["Namespace"], []any{"namespaces"}) || mutate["Service"] != nil {
		t.Errorf("mutate routes %v", mutate)
	}
}

// family is a library of one family, from a template: PKG is its METADATA
// and RULE its first rule's.
func family(pkg, rule, body string) map[string]string {
	return map[string]string{"f.rego": "# METADATA\n# title: F\n" + pkg + "package tenantguard.rules.f\n\n" + rule + body}
}

const (
	defaults = "# custom:\n#   kinds: [Pod]\n#   operations: [CREATE]\n#   engines: [opa, gatekeeper]\n"
	idX      = "# METADATA\n# title: X\n# custom:\n#   id: x\n"
	ruleX    = "violations contains {\"id\": \"x\", \"msg\": \"m\"} if input.a\n"
)

func TestABadLibraryIsRefusedNamingEveryProblem(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"a module that does not parse", map[string]string{"x.rego": "package x\nallow if {"}, []string{"x.rego:2:"}},
		{"a call of http.send", map[string]string{"x.rego": "package x\n\ny := http.send({\"method\": \"GET\", \"url\": \"http://x\"})\n"}, []string{"x.rego:3: calls http.send, which a tenantguard policy may not"}},
		{"a DNS lookup in a test", map[string]string{"x.rego": "package x\n", "x_test.rego": "package x_test\n\ntest_y if net.lookup_ip_addr(\"x\")\n"}, []string{"x_test.rego:3: calls net.lookup_ip_addr"}},
		{"opa.runtime called", map[string]string{"x.rego": "package x\n\ny := opa.runtime()\n"}, []string{"calls opa.runtime"}},
		{"http.send as a value", map[string]string{"x.rego": "package x\n\ny := http.send\n"}, []string{"x.rego:3: calls http.send"}},
		{"a rule id nobody declares", family(defaults, "", ruleX), []string{`rule id "x" has no METADATA declaring it`}},
		{"an id computed in the head", family(defaults, idX, "violations contains {\"id\": id, \"msg\": \"m\"} if id := input.a\n"), []string{"must name the rule id as a string"}},
		{"a METADATA id that is not the head's", family(defaults, "# METADATA\n# custom:\n#   id: y\n", ruleX), []string{`declares rule id y on a violations rule whose head names "x"`}},
		{"an id declared twice", family(defaults, idX, ruleX+"\n"+idX+ruleX), []string{`rule id "x" is declared again`}},
		{"an unknown field", family(defaults, "# METADATA\n# custom:\n#   id: x\n#   kind: [Pod]\n", ruleX), []string{`unknown field "kind"`}},
		{"no kinds and no operations", family("", idX, ruleX), []string{`rule "x" names no kinds`, `rule "x" names no operations`}},
		{"an unknown kind set", family("# custom:\n#   kinds: [pod-carrier]\n#   operations: [CREATE]\n", idX, ruleX), []string{`no kind set is named "pod-carrier"`}},
		{"a kind that is no kind", family("# custom:\n#   kinds: [apps/deployment]\n#   operations: [CREATE]\n", idX, ruleX), []string{`"apps/deployment" is not a kind`}},
		{"no claim of opa", family("# custom:\n#   kinds: [Pod]\n#   operations: [CREATE]\n#   engines: [gatekeeper]\n", idX, ruleX), []string{`rule "x" must claim opa`}},
		{"an id on the package", family(defaults+"#   id: x\n", idX, ruleX), []string{"id belongs on a violations rule"}},
		{"a rule that mutates in a family without mutations", family(defaults, "# METADATA\n# custom:\n#   id: x\n#   mutates: true\n", ruleX), []string{"declares a rule that mutates but has no mutations rule"}},
		{"an id that is not lower-case words and dashes", family(defaults, "# METADATA\n# custom:\n#   id: x.y\n", "violations contains {\"id\": \"x.y\", \"msg\": \"m\"} if input.a\n"), []string{`rule id "x.y" must be lower-case words joined by dashes`}},
		{"a misspelt built-in kind", family("# custom:\n#   kinds: [apps/Deploymnet]\n#   operations: [CREATE]\n", idX, ruleX), []string{`"Deploymnet" is not a kind of the built-in API group "apps"`}},
		{"a kind with a resource in a bad form", family("# custom:\n#   kinds: [{kind: example.com/Widget}]\n#   operations: [CREATE]\n", idX, ruleX), []string{"or {kind: group/Kind} with one or more of resource"}},
		{"a kind set's subresources that are not lists", map[string]string{"k.rego": "package k\n\n# METADATA\n# custom:\n#   kindSet: things\n#   subresources:\n#     Pod: ephemeralcontainers\ncarriers := {\"Pod\": \"spec\"}\n"}, []string{"the subresources of Pod must be a list"}},
		{"a kind set with a nested value", map[string]string{"k.rego": "package k\n\n# METADATA\n# custom:\n#   kindSet: things\ncarriers := {\"Pod\": {\"path\": \"spec\"}}\n"}, []string{"the path of Pod must be a dot-separated string"}},
		{"a family's defaults declared in two files", with(family(defaults, idX, ruleX), "g.rego", "# METADATA\n# custom:\n#   kinds: [Service]\npackage tenantguard.rules.f\n"), []string{"package annotation redeclared"}},
		{"an unknown operation, mode and engine", family("# custom:\n#   kinds: [Pod]\n#   operations: [PATCH]\n#   enforcement: block\n#   engines: [wasm]\n", idX, ruleX), []string{`operation "PATCH"`, `enforcement "block"`, `engine "wasm"`}},
		{"a read outside the registry and runtime, and an unknown Gatekeeper template", family("# custom:\n#   kinds: [Pod]\n#   operations: [CREATE]\n#   reads: [registry.tenants.pods, data.x, registry..y]\n#   gatekeeperTemplate: tenant\n", idX, ruleX),
			[]string{`reads "data.x" is not a dot-separated path under registry or runtime`, `reads "registry..y"`, `gatekeeperTemplate "tenant" is not family or rule`}},
		{"a subresource of no kind of the rule", family("# custom:\n#   kinds: [Pod]\n#   operations: [UPDATE]\n#   subresources: [services/status]\n", idX, ruleX), []string{`subresource "services/status" is not resource/subresource of one of its kinds`}},
		{"a subresource whose requests carry another kind", family("# custom:\n#   kinds: [apps/Deployment]\n#   operations: [UPDATE]\n#   subresources: [deployments/scale]\n", idX, ruleX), []string{`subresource "deployments/scale": its requests are not updates of the object's own kind`}},
		{"a kind set's subresource whose requests are creates of another kind", map[string]string{"k.rego": "package k\n\n# METADATA\n# custom:\n#   kindSet: things\n#   subresources:\n#     Pod: [eviction]\ncarriers := {\"Pod\": \"spec\"}\n"}, []string{"subresource eviction of Pod: its requests are not updates"}},
		{"mutations with no rule that mutates", family(defaults, idX, ruleX+"\nmutations contains {\"op\": \"add\"} if input.b\n"), []string{"has mutations but none of its rules says mutates: true"}},
		{"a claim of the CEL engines without CEL", family("# custom:\n#   kinds: [Pod]\n#   operations: [CREATE]\n#   engines: [opa, kyverno, vap]\n", idX, ruleX), []string{"claims kyverno and vap, but no *.cel file translates it"}},
		{"a claim of kyverno alone", family("# custom:\n#   kinds: [Pod]\n#   operations: [CREATE]\n#   engines: [opa, kyverno]\n", idX, ruleX), []string{"claims one of kyverno and vap but not the other"}},
		{"CEL for a rule that does not claim it", withCEL(family(defaults, idX, ruleX), "rules:\n  - {id: x, validation: 'true', message: '\"m\"'}\n"), []string{`rule "x" has a CEL translation but does not claim kyverno and vap`}},
		{"CEL mutations for no rule", withCEL(mutating(defaults), "mutations:\n  - {id: z, patchType: JSONPatch, expression: '[]'}\n"), []string{`f.cel:2: mutates for rule "z", which no family declares`}},
		{"CEL mutations for a rule that does not mutate", withCEL(family(defaults, idX, ruleX), "mutations:\n  - {id: x, patchType: JSONPatch, expression: '[]'}\n"), []string{`f.cel:2: mutates for rule "x", whose METADATA does not say mutates: true`}},
		{"a CEL mutation that does not parse", withCEL(mutating(defaults), "mutations:\n  - {id: x, patchType: JSONPatch, expression: '[JSONPatch{op: '}\n"), []string{"f.cel:2: a mutation of rule x: ERROR"}},
		{"a CEL mutation of an unknown patch type, and one on an operation the rule does not see", withCEL(mutating(defaults), "mutations:\n  - {id: x, patchType: MergePatch, expression: '{}'}\n  - {id: x, patchType: JSONPatch, expression: '[]', operations: [UPDATE]}\n"),
			[]string{`f.cel:2: a mutation of rule "x": patchType "MergePatch" is not JSONPatch or ApplyConfiguration`, `f.cel:3: a mutation of rule "x": operation "UPDATE" is not one of the rule's operations`}},
		{"a CEL mutation reading a variable nobody defines", withCEL(mutating(defaults), "mutations:\n  - {id: x, patchType: JSONPatch, expression: 'variables.nope'}\n"), []string{`the CEL of rule "x" reads variables.nope`}},
		{"a pointer of an object", with(withCEL(mutating(defaults), "variables:\n  - {name: p, atKindPath: {kindSet: things, object: object, pointer: true}}\n"), "k.rego", kindSetThings), []string{"f.cel:2: variable \"p\": a pointer is the path's"}},
		{"CEL for no rule, with an unknown variable and a syntax error", withCEL(family(defaults, idX, ruleX), "variables:\n  - {name: a, expression: 'variables.nope + 1'}\n  - {name: b, expression: '1 +'}\nrules:\n  - {id: z, validation: 'true', message: '\"m\"'}\n"), []string{`f.cel:5: translates rule "z", which no family declares`, `f.cel:2: variable "a" reads variables.nope`, "f.cel:3: variable b: ERROR"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fixtures.Library(tt.files)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("missing %q in\n%v", want, err)
				}
			}
		})
	}
}

// mutating is a family of one rule, x, that mutates, with the package
// METADATA pkg.
func mutating(pkg string) map[string]string {
	return family(pkg, "# METADATA\n# title: X\n# custom:\n#   id: x\n#   mutates: true\n", ruleX+"\nmutations contains {\"op\": \"add\"} if input.b\n")
}

// kindSetThings is a module defining the kind set "things".
const kindSetThings = "package k\n\n# METADATA\n# custom:\n#   kindSet: things\ncarriers := {\"Pod\": \"spec\", \"apps/Deployment\": \"spec.template.spec\"}\n"

// withCEL is a library with its CEL file f.cel.
func withCEL(files map[string]string, src string) map[string]string {
	return with(files, "f.cel", src)
}

// with is a library with one more file.
func with(files map[string]string, path, src string) map[string]string {
	out := maps.Clone(files)
	out[path] = src
	return out
}

func TestCELVariablesComeInTheOrderTheyReadEachOther(t *testing.T) {
	files := withCEL(family("# custom:\n#   kinds: [Pod]\n#   operations: [CREATE]\n#   engines: [opa, kyverno, vap]\n", idX, ruleX),
		"variables:\n  - {name: c, expression: 'variables.b && variables.a'}\n  - {name: b, expression: 'variables.a'}\n  - {name: a, expression: 'variables.registry.x'}\n  - {name: unused, expression: 'true'}\nrules:\n  - {id: x, validation: '!variables.c', message: '\"[x] \" + string(variables.managers)'}\n")
	c, err := fixtures.Library(files)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := c.Rule("x")
	var names []string
	for _, v := range r.CEL.Variables {
		names = append(names, v.Name)
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("variables %v, want a, b, c (each after those it reads, unused ones left out)", names)
	}

	cycle := withCEL(files, "variables:\n  - {name: a, expression: 'variables.b'}\n  - {name: b, expression: 'variables.a'}\nrules:\n  - {id: x, validation: 'variables.a', message: '\"m\"'}\n")
	if _, err := fixtures.Library(cycle); err == nil || !strings.Contains(err.Error(), "read each other") {
		t.Errorf("a cycle: %v", err)
	}
}

func TestTheCapabilitiesLeaveOutWhatAPolicyMayNotCall(t *testing.T) {
	caps := catalog.Capabilities()
	for _, b := range caps.Builtins {
		if catalog.Refused(b.Name) {
			t.Errorf("%s is in the capabilities", b.Name)
		}
	}
	if len(caps.Builtins) < 100 || caps.AllowNet == nil || len(caps.AllowNet) != 0 {
		t.Errorf("%d built-ins, allow_net %v", len(caps.Builtins), caps.AllowNet)
	}
	m, err := catalog.ParseModule("x.rego", "package x\n\ny := http.send({})\n")
	if err != nil {
		t.Fatal(err)
	}
	compiler := ast.NewCompiler().WithCapabilities(caps)
	if compiler.Compile(map[string]*ast.Module{"x.rego": m}); !compiler.Failed() || !strings.Contains(compiler.Errors.Error(), "http.send") {
		t.Errorf("a call of http.send compiled: %v", compiler.Errors)
	}
}

func TestAFamilyMaySpreadOverSeveralFiles(t *testing.T) {
	files := with(family(defaults, idX, ruleX), "g.rego", "package tenantguard.rules.f\n\n"+
		"violations contains {\"id\": \"x\", \"msg\": \"n\"} if input.b\n\n"+
		"# METADATA\n# custom:\n#   id: y\n#   mutates: true\nviolations contains {\"id\": \"y\", \"msg\": \"m\"} if input.c\n")
	files = with(files, "h.rego", "package tenantguard.rules.f\n\nmutations contains {\"op\": \"add\"} if input.d\n")
	c, err := fixtures.Library(files)
	if err != nil {
		t.Fatal(err)
	}
	if ids := c.IDs(); !slices.Equal(ids, []string{"x", "y"}) {
		t.Errorf("rules %v", ids)
	}
	if y, _ := c.Rule("y"); !y.Mutates || !slices.Equal(y.KindKeys(), []string{"Pod"}) {
		t.Errorf("y, in another file, is %+v: it inherits the family's defaults", y)
	}
}

func TestKindsNameTheirResources(t *testing.T) {
	files := family("# custom:\n#   kinds: [Pod, networking.k8s.io/NetworkPolicy, gateway.networking.k8s.io/Gateway, {kind: Endpoints, resource: endpoints}]\n#   operations: [CREATE]\n#   engines: [opa]\n", idX, ruleX)
	c, err := fixtures.Library(files)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := c.Rule("x")
	var got []string
	for _, k := range r.Kinds {
		got = append(got, k.Resource)
	}
	if want := []string{"pods", "networkpolicies", "gateways", "endpoints"}; !slices.Equal(got, want) {
		t.Errorf("resources %v, want %v", got, want)
	}
}

// TestAKindMaySeeFewerOfItsRulesOperations: operations on a kind narrow
// the rule's for that kind alone, in the validating and the mutating
// routes, its subresources' updates with them; a kind cannot widen them,
// be narrowed and listed again, or keep a subresource it is not updated
// through.
func TestAKindMaySeeFewerOfItsRulesOperations(t *testing.T) {
	library := func(kinds, subresources string) (*catalog.Catalog, error) {
		return fixtures.Library(mutating("# custom:\n#   kinds: [" + kinds + "]\n#   subresources: [" + subresources + "]\n#   operations: [CREATE, UPDATE, DELETE]\n#   engines: [opa]\n"))
	}
	c, err := library("Pod, {kind: example.com/Widget, operations: [DELETE, CREATE, CREATE]}, {kind: example.com/Gadget, operations: [UPDATE, DELETE, CREATE]}", "pods/resize")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := c.Rule("x")
	validating := []catalog.Route{
		{Resource: "pods", Operations: []string{"CREATE", "UPDATE", "DELETE"}},
		{Resource: "pods/resize", Operations: []string{"UPDATE"}},
		{Group: "example.com", Resource: "widgets", Operations: []string{"CREATE", "DELETE"}},
		{Group: "example.com", Resource: "gadgets", Operations: []string{"CREATE", "UPDATE", "DELETE"}},
	}
	if got := r.Routes(false); !reflect.DeepEqual(got, validating) {
		t.Errorf("validating routes %+v, want %+v", got, validating)
	}
	mutatingRoutes := []catalog.Route{
		{Resource: "pods", Operations: []string{"CREATE", "UPDATE"}},
		{Resource: "pods/resize", Operations: []string{"UPDATE"}},
		{Group: "example.com", Resource: "widgets", Operations: []string{"CREATE"}},
		{Group: "example.com", Resource: "gadgets", Operations: []string{"CREATE", "UPDATE"}},
	}
	if got := r.Routes(true); !reflect.DeepEqual(got, mutatingRoutes) {
		t.Errorf("mutating routes %+v, want %+v", got, mutatingRoutes)
	}
	updates := []catalog.Route{{Resource: "pods", Operations: []string{"UPDATE"}}, {Resource: "pods/resize", Operations: []string{"UPDATE"}}, {Group: "example.com", Resource: "gadgets", Operations: []string{"UPDATE"}}}
	if got := r.RoutesFor([]string{"UPDATE"}); !reflect.DeepEqual(got, updates) {
		t.Errorf("routes for UPDATE %+v, want %+v", got, updates)
	}
	if got := r.Kinds[1].Operations; !slices.Equal(got, []string{"CREATE", "DELETE"}) {
		t.Errorf("the widget's operations %v, want CREATE, DELETE: once each, in order", got)
	}
	if got := r.Kinds[2].Operations; got != nil {
		t.Errorf("the gadget's operations %v, want nil: all of the rule's narrow nothing", got)
	}
	for _, tt := range []struct{ kinds, subresources, want string }{
		{"{kind: Pod, operations: [CONNECT]}", "", `the operations of Pod (CONNECT) narrow the rule's: name one or more of CREATE, UPDATE, DELETE`},
		{"{kind: Pod, operations: []}", "", `the operations of Pod () narrow the rule's`},
		{"Pod, {kind: Pod, operations: [CREATE]}", "", `Pod is listed more than once (by name or in a kind set) and narrowed by operations`},
		{"{kind: Pod, operations: [CREATE]}, Pod", "", `Pod is listed more than once`},
		{"{kind: Pod, operations: [CREATE]}", "pods/resize", `subresource "pods/resize" is only ever updated, and the rule's operations for Pod (CREATE) leave out UPDATE`},
	} {
		if _, err := library(tt.kinds, tt.subresources); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.kinds, err, tt.want)
		}
	}
	_, err = fixtures.Library(family("# custom:\n#   kinds: [{kind: Pod, operations: [DELETE]}]\n#   operations: [CREATE, UPDATE]\n#   engines: [opa]\n", idX, ruleX))
	if want := `the operations of Pod (DELETE) narrow the rule's: name one or more of CREATE, UPDATE`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("an operation the rule does not see: error %v, want %q", err, want)
	}
}

// TestAKindOfAnotherAPIMayLiveInNoNamespace: scope: Cluster marks a kind
// of another API as cluster-scoped (review then sends its objects in no
// namespace); a built-in kind's scope is not the library's to say, and a
// scope is Namespaced or Cluster.
func TestAKindOfAnotherAPIMayLiveInNoNamespace(t *testing.T) {
	library := func(kinds string) (*catalog.Catalog, error) {
		return fixtures.Library(family("# custom:\n#   kinds: ["+kinds+"]\n#   operations: [CREATE]\n#   engines: [opa]\n", idX, ruleX))
	}
	c, err := library("{kind: example.com/Cactus, resource: cacti, scope: Cluster}, {kind: example.com/Pot, resource: pots, scope: Namespaced}")
	if err != nil {
		t.Fatal(err)
	}
	if !c.ClusterScoped(schema.GroupKind{Group: "example.com", Kind: "Cactus"}) || c.ClusterScoped(schema.GroupKind{Group: "example.com", Kind: "Pot"}) {
		t.Error("Cactus should be cluster-scoped and Pot not")
	}
	for kinds, want := range map[string]string{
		"{kind: Node, resource: nodes, scope: Cluster}":                  "Node is a built-in kind, whose scope tenantguard knows",
		"{kind: example.com/Cactus, resource: cacti, scope: Everywhere}": `the scope of example.com/Cactus is Namespaced (the default) or Cluster, not "Everywhere"`,
	} {
		if _, err := library(kinds); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", kinds, err, want)
		}
	}
}

func TestCELMutationsComeInOrderWithTheVariablesTheyRead(t *testing.T) {
	files := with(withCEL(mutating("# custom:\n#   kinds: [Pod]\n#   operations: [CREATE, UPDATE]\n#   engines: [opa, kyverno, vap]\n"),
		"variables:\n  - {name: b, expression: 'variables.a + \"/x\"'}\n  - {name: a, expression: 'variables.registry.x'}\n  - {name: c, expression: 'true'}\n"+
			"  - {name: p, atKindPath: {kindSet: things, pointer: true}}\n"+
			"rules:\n  - {id: x, validation: 'variables.c', message: '\"[x] m\"'}\n"+
			"mutations:\n  - {id: x, patchType: JSONPatch, expression: '[JSONPatch{op: \"add\", path: variables.b, value: 1}]'}\n"+
			"  - {id: x, patchType: ApplyConfiguration, expression: 'variables.p == \"\" ? Object{} : Object{}', operations: [UPDATE]}\n"), "k.rego", kindSetThings)
	c, err := fixtures.Library(files)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := c.Rule("x")
	names := func(vars []catalog.Variable) (out []string) {
		for _, v := range vars {
			out = append(out, v.Name)
		}
		return out
	}
	if got := names(r.CEL.Variables); !slices.Equal(got, []string{"c"}) {
		t.Errorf("the validation's variables %v, want c", got)
	}
	if got := names(r.CEL.MutationVariables); !slices.Equal(got, []string{"a", "b", "p"}) {
		t.Errorf("the mutations' variables %v, want a, b, p (each after those it reads)", got)
	}
	if len(r.CEL.Mutations) != 2 || r.CEL.Mutations[0].PatchType != catalog.PatchJSONPatch || r.CEL.Mutations[1].PatchType != catalog.PatchApplyConfiguration ||
		!slices.Equal(r.CEL.Mutations[0].Operations, []string{"CREATE"}) || !slices.Equal(r.CEL.MutationOperations(), []string{"CREATE", "UPDATE"}) {
		t.Errorf("mutations %+v, operations %v: two, in order, the first on CREATE by default", r.CEL.Mutations, r.CEL.MutationOperations())
	}
	pointer := r.CEL.MutationVariables[2].Expression
	for _, want := range []string{`request.kind.kind == "Pod") ? "/spec"`, `request.kind.kind == "Deployment") ? "/spec/template/spec"`, `: ""`} {
		if !strings.Contains(pointer, want) {
			t.Errorf("the pointer %s lacks %s", pointer, want)
		}
	}

	// a rule may have its defaults in CEL and its validation not
	only, err := fixtures.Library(withCEL(mutating(defaults), "mutations:\n  - {id: x, patchType: JSONPatch, expression: '[]'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := only.Rule("x"); r.HasCELValidation() || !r.HasCELMutations() || r.NotExpressible == "" {
		t.Errorf("a rule with CEL mutations only: %+v", r)
	}
}

func TestTheEmbeddedLibrarySetsTheLabelAndTheDefaultClassesInCEL(t *testing.T) {
	for _, id := range []string{"namespace-ownership", "priority-class", "storage-class"} {
		if r, _ := catalog.MustEmbedded().Rule(id); !r.Mutates || !r.HasCELMutations() {
			t.Errorf("%s: mutates %v, CEL mutations %v", id, r.Mutates, r.HasCELMutations())
		}
	}
}

func TestTheRulesAboutChangesAreLeftOutOfTheAudit(t *testing.T) {
	// A cordon is about changes, a deletion is only a DELETE, the
	// companions are audited as tenantguard's own identity, which the
	// managed-resource rule always lets through, and who named a namespace
	// or set its protected metadata (an administrator may) is not stored.
	notAudited := []string{"managed-resource", "namespace-deletion", "namespace-prefix", "protected-metadata", "tenant-cordoned"}
	var got []string
	for _, r := range catalog.MustEmbedded().Rules() {
		if !r.Audit {
			got = append(got, r.ID)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, notAudited) {
		t.Errorf("rules left out of the audit %v, want %v", got, notAudited)
	}
}

// TestALibraryWithADataFileIsRefused: a rule reading an OPA data file
// would find it undefined and fail open, so a library or an overlay that
// holds one is refused naming it; files of other kinds (a README) are
// left alone.
func TestALibraryWithADataFileIsRefused(t *testing.T) {
	for _, name := range []string{"data.json", "cacti/data.yaml", "data.yml"} {
		t.Run(name, func(t *testing.T) {
			_, err := catalog.LoadOverlay(rego.FS(), fstest.MapFS{name: {Data: []byte("{}")}, "README.md": {Data: []byte("# cacti")}})
			if err == nil || !strings.Contains(err.Error(), "overlay/"+name+": tenantguard does not load data files") {
				t.Fatalf("error %v, want one naming overlay/%s", err, name)
			}
		})
	}
	if _, err := catalog.LoadOverlay(rego.FS(), fstest.MapFS{"README.md": {Data: []byte("# cacti")}}); err != nil {
		t.Errorf("an overlay of a README only: %v", err)
	}
}

// TestAnOverlayAddsOnlyPackagesOfItsOwn: an overlay's module in a package
// of the library, above or below one, or under the data the engine
// provides, is refused naming its file, however the package is written;
// one in a package of its own is added.
func TestAnOverlayAddsOnlyPackagesOfItsOwn(t *testing.T) {
	own := "# METADATA\n# title: Cacti\n# description: No cacti.\n# custom:\n#   kinds: [{kind: example.com/Cactus, resource: cacti}]\n#   operations: [CREATE]\n#   engines: [opa]\npackage tenantguard.rules.cacti\n\n# METADATA\n# title: No cacti\n# description: No cacti.\n# custom:\n#   id: no-cacti\nviolations contains {\"id\": \"no-cacti\", \"msg\": \"x\"} if false\n"
	for _, tt := range []struct {
		name, src, want string
	}{
		{"a family of the library", "package tenantguard.rules.images\n", "overlay/x.rego:1: package tenantguard.rules.images is in the library's own tenantguard.rules.images"},
		{"the same family written as a quoted path", "package tenantguard.rules[\"images\"]\n", "overlay/x.rego:1: package tenantguard.rules.images is in the library's own"},
		{"a package under a family", "package tenantguard.rules.images.extra\n", "overlay/x.rego:1: package tenantguard.rules.images.extra is in the library's own tenantguard.rules.images"},
		{"a package above the families", "package tenantguard.rules\n", "overlay/x.rego:1: package tenantguard.rules is in the library's own"},
		{"the registry the engine provides", "package tenantguard.registry.settings\n\nenforcement := {}\n", "overlay/x.rego:1: package tenantguard.registry.settings is in the library's own tenantguard.registry"},
		{"a family of its own", own, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cat, err := catalog.LoadOverlay(rego.FS(), fstest.MapFS{"x.rego": {Data: []byte(tt.src)}})
			if tt.want != "" {
				// a test file in the package is refused alike: the
				// exported bundle holds the tests as modules
				_, terr := catalog.LoadOverlay(rego.FS(), fstest.MapFS{"x_test.rego": {Data: []byte(tt.src)}})
				if want := strings.Replace(tt.want, "x.rego", "x_test.rego", 1); terr == nil || !strings.Contains(terr.Error(), want) {
					t.Errorf("as a test: error %v, want %q", terr, want)
				}
			}
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(cat.IDs(), "no-cacti") {
					t.Fatalf("the overlay's rule is not in the library: %v", cat.IDs())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestFilesRevisionIsTheLoadedLibrarysRevision: what a watcher hashes
// without parsing is the revision of the library it would load.
func TestFilesRevisionIsTheLoadedLibrarysRevision(t *testing.T) {
	overlay := fstest.MapFS{"README.md": {Data: []byte("# nothing")}}
	cat, err := catalog.LoadOverlay(rego.FS(), overlay)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := catalog.FilesRevision(rego.FS(), overlay)
	if err != nil || rev != cat.Revision() {
		t.Fatalf("files revision %q (%v), want the loaded library's %q", rev, err, cat.Revision())
	}
	other, err := catalog.FilesRevision(rego.FS(), fstest.MapFS{"x_test.rego": {Data: []byte("package x_test\n")}})
	if err != nil || other == rev {
		t.Errorf("another overlay's files revision %q (%v), want one of its own", other, err)
	}
}
