package tests

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// oldestMutatingCompatibility is the CEL compatibility version of the
// oldest API server that serves MutatingAdmissionPolicy v1: 1.36, which
// compiles new expressions at 1.35.
var oldestMutatingCompatibility = version.MajorMinor(1, 35)

// TestMutatingPoliciesCompileOnTheOldestServer compiles every
// MutatingAdmissionPolicy of the VAP export as the API server's plugin does,
// at the CEL of the oldest API server that serves them; the live test
// installs them into a newer one.
func TestMutatingPoliciesCompileOnTheOldestServer(t *testing.T) {
	snap, err := registry.Load(filepath.Join("..", "examples", "registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lib, err := export.VAP(snap, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var compiled []string
	for _, obj := range lib.Objects {
		if obj["kind"] != "MutatingAdmissionPolicy" {
			continue
		}
		var policy admissionregistrationv1.MutatingAdmissionPolicy
		convert(t, obj, &policy)
		compileMutatingPolicy(t, &policy)
		compiled = append(compiled, strings.TrimPrefix(policy.Name, "tenantguard-"))
	}
	var want []string
	for _, r := range catalog.MustEmbedded().Rules() {
		if r.HasCELMutations() {
			want = append(want, r.ID)
		}
	}
	if !slices.Equal(compiled, want) || len(want) < 3 {
		t.Errorf("MutatingAdmissionPolicies for %v, want one for each rule with CEL mutations: %v", compiled, want)
	}
}

// compileMutatingPolicy fails on any expression of the policy that the
// MutatingAdmissionPolicy plugin would not compile.
func compileMutatingPolicy(t testing.TB, policy *admissionregistrationv1.MutatingAdmissionPolicy) {
	t.Helper()
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(oldestMutatingCompatibility))
	if err != nil {
		t.Fatal(err)
	}
	vars := plugincel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil, HasAuthorizer: true}
	for _, v := range policy.Spec.Variables {
		if r := compiler.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, vars, environment.NewExpressions); r.Error != nil {
			t.Fatalf("%s: variable %s does not compile: %v", policy.Name, v.Name, r.Error)
		}
	}
	vars.HasPatchTypes = true
	for i, m := range policy.Spec.Mutations {
		var accessor plugincel.ExpressionAccessor
		switch {
		case m.JSONPatch != nil:
			accessor = &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}
		case m.ApplyConfiguration != nil:
			accessor = &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}
		default:
			t.Fatalf("%s: mutation %d has no expression", policy.Name, i)
		}
		if errs := compiler.CompileMutatingEvaluator(accessor, vars, environment.NewExpressions).CompilationErrors(); len(errs) > 0 {
			t.Fatalf("%s: mutation %d does not compile: %v", policy.Name, i, errs)
		}
	}
}
