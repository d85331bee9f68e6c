package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/live"
)

// oldestCompatibility is the CEL compatibility version of the oldest API
// server the exports support: a 1.33 server compiles new expressions at
// 1.32, the first with two-variable comprehensions.
var oldestCompatibility = version.MajorMinor(1, 32)

// celPolicy is one policy compiled as the API server's
// ValidatingAdmissionPolicy plugin compiles it.
type celPolicy struct {
	rule      string
	actions   []string
	spec      admissionregistrationv1.ValidatingAdmissionPolicySpec
	selector  labels.Selector
	validator validating.Validator
}

// compileCELPolicy compiles a policy spec (a ValidatingAdmissionPolicy's or
// a Kyverno ValidatingPolicy's, which share the fields used here) with the
// Kubernetes CEL environment, and fails on any expression that does not
// compile. params is the parameter object for policies with paramKind.
func compileCELPolicy(t testing.TB, name string, rawSpec map[string]any, actions []string) *celPolicy {
	t.Helper()
	p := &celPolicy{rule: strings.TrimPrefix(name, "tenantguard-"), actions: actions, selector: labels.Everything()}
	convert(t, rawSpec, &p.spec)
	if ns := p.spec.MatchConstraints.NamespaceSelector; ns != nil {
		sel, err := metav1.LabelSelectorAsSelector(ns)
		if err != nil {
			t.Fatal(err)
		}
		p.selector = sel
	}
	vars := plugincel.OptionalVariableDeclarations{HasParams: p.spec.ParamKind != nil, HasAuthorizer: true}
	// expressions are compiled as a new policy is on the oldest API server the
	// export supports (docs/policy-library.md)
	envs := environment.MustBaseEnvSet(oldestCompatibility)
	compiler, err := plugincel.NewCompositedCompiler(envs)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range p.spec.Variables {
		if r := compiler.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, vars, environment.NewExpressions); r.Error != nil {
			t.Fatalf("%s: variable %s does not compile: %v", name, v.Name, r.Error)
		}
	}
	var validations, messages []plugincel.ExpressionAccessor
	for _, v := range p.spec.Validations {
		validations = append(validations, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason})
		messages = append(messages, &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression})
	}
	// compile each expression alone too, so that an error names it
	for _, e := range slices.Concat(validations, messages) {
		if r := compiler.CompileCELExpression(e, vars, environment.NewExpressions); r.Error != nil {
			t.Fatalf("%s: %v", name, r.Error)
		}
	}
	p.validator = validating.NewValidator(
		compiler.CompileCondition(validations, vars, environment.NewExpressions), nil,
		compiler.CompileCondition(nil, vars, environment.NewExpressions),
		compiler.CompileCondition(messages, plugincel.OptionalVariableDeclarations{HasParams: vars.HasParams}, environment.NewExpressions),
		p.spec.FailurePolicy, nil)
	return p
}

// matches reports whether the policy's matchConstraints select the request.
func (p *celPolicy) matches(c *corpusCase) bool {
	req := c.request
	resource := req.Resource.Resource
	if req.SubResource != "" {
		resource += "/" + req.SubResource
	}
	matched := false
	for _, r := range p.spec.MatchConstraints.ResourceRules {
		if (slices.Contains(r.APIGroups, "*") || slices.Contains(r.APIGroups, req.Resource.Group)) &&
			(slices.Contains(r.Resources, resource) || (req.SubResource == "" && slices.Contains(r.Resources, "*"))) &&
			slices.Contains(r.Operations, admissionregistrationv1.OperationType(req.Operation)) {
			matched = true
		}
	}
	if !matched || req.Namespace == "" {
		return matched
	}
	ns := c.namespaceObject()
	var nsLabels map[string]string
	if ns != nil {
		meta, _ := ns["metadata"].(map[string]any)
		raw, _ := meta["labels"].(map[string]any)
		nsLabels = map[string]string{}
		for k, v := range raw {
			nsLabels[k] = fmt.Sprint(v)
		}
	}
	return p.selector.Matches(labels.Set(nsLabels))
}

// evaluate runs the policy on the case as the API server would, params
// being the parameter object (nil without paramKind). It returns whether
// the validation failed and its message.
func (p *celPolicy) evaluate(t testing.TB, c *corpusCase, params runtime.Object) (failed bool, message string) {
	t.Helper()
	req := c.request
	decode := func(raw []byte) runtime.Object {
		if len(raw) == 0 {
			return nil
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		return u
	}
	obj, old := decode(req.Object.Raw), decode(req.OldObject.Raw)
	gvk := schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}
	gvr := schema.GroupVersionResource{Group: req.Resource.Group, Version: req.Resource.Version, Resource: req.Resource.Resource}
	attrs := admission.NewAttributesRecord(obj, old, gvk, req.Namespace, req.Name, gvr, req.SubResource,
		admission.Operation(req.Operation), nil, false, &user.DefaultInfo{Name: req.UserInfo.Username, Groups: req.UserInfo.Groups})
	versioned := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk, VersionedObject: admission.NewLazyObject(obj), VersionedOldObject: admission.NewLazyObject(old)}
	var namespace *corev1.Namespace
	if ns := c.namespaceObject(); ns != nil {
		namespace = &corev1.Namespace{}
		convert(t, ns, namespace)
	}
	result := p.validator.Validate(t.Context(), gvr, versioned, params, namespace, cel.RuntimeCELCostBudget, nil)
	for _, d := range result.Decisions {
		switch d.Evaluation {
		case validating.EvalError:
			t.Fatalf("%s: evaluation error: %s", p.rule, d.Message)
		case validating.EvalDeny:
			return true, d.Message
		}
	}
	return false, ""
}

// modeOf maps validationActions to tenantguard's enforcement mode.
func modeOf(actions []string) string {
	switch {
	case slices.Contains(actions, "Deny"):
		return "deny"
	case slices.Contains(actions, "Warn"):
		return "warn"
	default:
		return "dryrun"
	}
}

// deleteWithoutOld is the corpus case of a DELETE without oldObject.
const deleteWithoutOld = "delete without an old object is judged from the cluster view"

// refusesDeleteWithoutOld: API servers send oldObject on DELETE since 1.15;
// admission policies have nothing else to judge a deletion by.
func refusesDeleteWithoutOld(c *corpusCase) string {
	if c.request.Operation == "DELETE" && len(c.request.OldObject.Raw) == 0 {
		return "a DELETE without oldObject"
	}
	return ""
}

// judgeCEL decides a case with compiled policies.
func judgeCEL(t testing.TB, c *corpusCase, policies []*celPolicy, params runtime.Object) (verdict, []string) {
	v := verdictOf{}
	var problems []string
	for _, p := range policies {
		if !p.matches(c) {
			continue
		}
		if failed, msg := p.evaluate(t, c, params); failed {
			v.add(modeOf(p.actions), p.rule)
			if !strings.HasPrefix(msg, "["+p.rule+"] ") {
				problems = append(problems, fmt.Sprintf("%s: message %q does not start with its rule id", p.rule, msg))
			}
		}
	}
	return v.verdict(), problems
}

// kyvernoJudge creates the exported Kyverno ValidatingPolicies on a real
// API server with Kyverno's own CRD installed (its schema must accept
// them), then evaluates their CEL on each case with the Kubernetes CEL
// environment and the API server's own policy validator, which Kyverno's
// CEL engine builds on.
func kyvernoJudge(cluster *sharedCluster, cat *catalog.Catalog) judge {
	return kyvernoCEL(cluster, cat)
}

// kyvernoJudgeOffline evaluates the policies' CEL without a cluster.
func kyvernoJudgeOffline() judge { return kyvernoCEL(nil, nil) }

func kyvernoCEL(cluster *sharedCluster, cat *catalog.Catalog) judge {
	var (
		lib      *export.Library
		policies []*celPolicy
	)
	return judge{
		name:     "Kyverno (CEL)",
		covers:   func(rule string) bool { return lib == nil || lib.Covers(rule) },
		refuses:  refusesDeleteWithoutOld,
		notTaken: []string{deleteWithoutOld},
		load: func(t testing.TB, registryFile string) {
			snap, err := registry.Load(registryFile)
			if err != nil {
				t.Fatal(err)
			}
			if lib, err = export.Kyverno(snap, export.Options{Catalog: cat}); err != nil {
				t.Fatal(err)
			}
			if cluster != nil {
				installKyverno(t, cluster.get(t), lib)
			}
			policies = nil
			for _, obj := range lib.Objects {
				meta, _ := obj["metadata"].(map[string]any)
				spec, _ := obj["spec"].(map[string]any)
				var actions []string
				convert(t, spec["validationActions"], &actions)
				policies = append(policies, compileCELPolicy(t, fmt.Sprint(meta["name"]), spec, actions))
			}
		},
		decide: func(t testing.TB, c *corpusCase) (verdict, []string) {
			return judgeCEL(t, c, policies, nil)
		},
	}
}

// kyvernoCRD is Kyverno's ValidatingPolicy CRD, fetched from its Go module
// by `make kyverno-crds`.
var kyvernoCRD = filepath.Join(live.AssetsDir(), "crds", "kyverno-validatingpolicies.yaml")

// installKyverno installs Kyverno's CRD (once) and creates the library's
// policies on the API server, whose validation of them is the CRD's schema.
func installKyverno(t testing.TB, vc *vapCluster, lib *export.Library) {
	t.Helper()
	gvk := schema.GroupVersionKind{Group: "policies.kyverno.io", Version: "v1", Kind: "ValidatingPolicy"}
	if _, err := vc.cp.Resource(gvk); err != nil {
		raw, err := os.ReadFile(kyvernoCRD)
		if err != nil {
			t.Fatalf("%v: run `make kyverno-crds`", err)
		}
		force := true
		if _, err := vc.cp.Apply(t.Context(), string(raw), metav1.PatchOptions{FieldManager: "kyverno", Force: &force}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "Kyverno's ValidatingPolicy kind to be served", func() bool {
			_, err := vc.cp.Resource(gvk)
			return err == nil
		})
		// the schema is no formality: it refuses an unknown action
		bad := deepCopy(t, lib.Objects[0])
		bad["metadata"] = map[string]any{"name": "schema-check"}
		bad["spec"].(map[string]any)["validationActions"] = []any{"Block"}
		if err := applyObjects(t, vc, bad); err == nil || !strings.Contains(err.Error(), "Block") {
			t.Fatalf("Kyverno's CRD accepted validationActions [Block]: %v", err)
		}
	}
	if err := applyObjects(t, vc, lib.Objects...); err != nil {
		t.Fatalf("the API server, with Kyverno's CRD, refused the exported policies: %v", err)
	}
}

func applyObjects(t testing.TB, vc *vapCluster, objects ...map[string]any) error {
	t.Helper()
	_, err := vc.cp.ApplyObjects(t.Context(), objects, metav1.PatchOptions{FieldManager: "export", Force: new(true)})
	return err
}
