package export

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/registry"
)

func TestVAPExportsAMutatingPolicyForEveryRuleWithCELMutations(t *testing.T) {
	// a registry that puts host-network and host-ports in warn and dryrun:
	// defaults are set whatever a rule's mode
	snap, err := registry.Load(filepath.Join("..", "..", "tests", "fixtures", "registry-enforcement.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lib, err := VAP(snap, Options{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]any{}
	var order []string
	for _, obj := range lib.Objects {
		name := fmt.Sprint(obj["kind"], "/", obj["metadata"].(map[string]any)["name"])
		byName[name] = obj
		order = append(order, fmt.Sprint(obj["kind"]))
	}
	if i := slices.Index(order, "MutatingAdmissionPolicy"); i < 0 || slices.Contains(order[i:], "ValidatingAdmissionPolicy") {
		t.Errorf("the MutatingAdmissionPolicies come after the ValidatingAdmissionPolicies: %v", order)
	}
	mutating := 0
	for _, r := range catalog.MustEmbedded().Rules() {
		policy, binding := byName["MutatingAdmissionPolicy/tenantguard-"+r.ID], byName["MutatingAdmissionPolicyBinding/tenantguard-"+r.ID]
		if !r.HasCELMutations() {
			if policy != nil || binding != nil {
				t.Errorf("%s sets no default in CEL, yet has a MutatingAdmissionPolicy", r.ID)
			}
			continue
		}
		mutating++
		if policy == nil || binding == nil {
			t.Errorf("%s: no MutatingAdmissionPolicy and binding", r.ID)
			continue
		}
		spec := policy["spec"].(map[string]any)
		if spec["failurePolicy"] != "Fail" || spec["reinvocationPolicy"] != "IfNeeded" || spec["paramKind"].(map[string]any)["kind"] != ParamsKind {
			t.Errorf("%s: policy %v", r.ID, spec)
		}
		match := spec["matchConstraints"].(map[string]any)
		for _, rule := range match["resourceRules"].([]any) {
			ops := rule.(map[string]any)["operations"].([]any)
			var want []any
			for _, op := range r.CEL.MutationOperations() {
				want = append(want, op)
			}
			if !slices.Equal(ops, want) {
				t.Errorf("%s matches %v; its mutations act on %v", r.ID, ops, want)
			}
			for _, resource := range rule.(map[string]any)["resources"].([]any) {
				if strings.Contains(resource.(string), "/") {
					t.Errorf("%s matches the subresource %s, which is never created", r.ID, resource)
				}
			}
		}
		if _, selects := match["namespaceSelector"]; selects == r.JudgesNamespaces() {
			t.Errorf("%s: namespaceSelector %v; only policies of namespaces go without", r.ID, match["namespaceSelector"])
		}
		variables := spec["variables"].([]any)
		if len(variables) != 2+len(r.CEL.MutationVariables) || variables[0].(map[string]any)["expression"] != paramsRegistry {
			t.Errorf("%s: variables %v, want registry and managers from the parameters, then those its mutations read", r.ID, variables)
		}
		mutations := spec["mutations"].([]any)
		if len(mutations) != len(r.CEL.Mutations) || mutations[0].(map[string]any)["jsonPatch"].(map[string]any)["expression"] != r.CEL.Mutations[0].Expression {
			t.Errorf("%s: mutations %v", r.ID, mutations)
		}
		bspec := binding["spec"].(map[string]any)
		if bspec["policyName"] != "tenantguard-"+r.ID || bspec["paramRef"].(map[string]any)["parameterNotFoundAction"] != "Deny" || bspec["validationActions"] != nil {
			t.Errorf("%s: binding %v", r.ID, bspec)
		}
		if want := "covered (ValidatingAdmissionPolicy tenantguard-" + r.ID + ") and its default (MutatingAdmissionPolicy tenantguard-" + r.ID + ")"; lib.Coverage[r.ID] != want {
			t.Errorf("%s: coverage %q, want %q", r.ID, lib.Coverage[r.ID], want)
		}
	}
	if mutating < 3 {
		t.Errorf("%d rules set their defaults in CEL; the tenant label, PriorityClass and StorageClass do", mutating)
	}
	kyverno, err := Kyverno(snap, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := kyverno.Coverage["priority-class"]; !strings.HasSuffix(got, ", no default") {
		t.Errorf("Kyverno's coverage of priority-class %q does not say it sets no default", got)
	}
}
