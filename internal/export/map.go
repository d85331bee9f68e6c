package export

import (
	"github.com/tenantguard/tenantguard/internal/catalog"
)

// mutatingPolicies are, for every rule whose CEL sets its defaults, a
// MutatingAdmissionPolicy and a binding named tenantguard-<rule>: its
// mutations, in order, on the operations they act on (CREATE unless the
// rule's CEL says otherwise) of the rule's kinds, with the same parameter
// object, namespaces and matchConditions as the ValidatingAdmissionPolicies.
//
// The bindings take no enforcement mode: tenantguard's mutating webhook sets
// the defaults whatever a rule's mode, since a default is no denial, and so
// do the policies. They are reinvoked (IfNeeded) when a later mutation
// changes the object, so that a claim or pod template another webhook or
// policy adds after them gets the default too; each sets only what is
// missing, so a second run changes nothing it set.
// notAControlledReplicaSet leaves out the ReplicaSets a controller owns, to
// which the library's mutations set no default either
// (podspec.controlled_replica_set): their template must stay their owner's,
// whose controller finds them by comparing the two.
const notAControlledReplicaSet = `!(request.kind.group == "apps" && request.kind.kind == "ReplicaSet" && object != null &&
  object.metadata.?ownerReferences.orValue([]).exists(o, o.?controller.orValue(false) == true))`

func mutatingPolicies(cat *catalog.Catalog, tenantLabel string) []map[string]any {
	var out []map[string]any
	for i := range cat.Rules() {
		r := &cat.Rules()[i]
		if !r.HasCELMutations() {
			continue
		}
		mutations := make([]any, len(r.CEL.Mutations))
		for j, m := range r.CEL.Mutations {
			field := map[string]string{catalog.PatchJSONPatch: "jsonPatch", catalog.PatchApplyConfiguration: "applyConfiguration"}[m.PatchType]
			mutations[j] = map[string]any{"patchType": m.PatchType, field: map[string]any{"expression": m.Expression}}
		}
		out = append(out, map[string]any{
			"apiVersion": "admissionregistration.k8s.io/v1",
			"kind":       "MutatingAdmissionPolicy",
			"metadata":   map[string]any{"name": celPolicyName(r.ID)},
			"spec": map[string]any{
				"paramKind":          paramKind(),
				"failurePolicy":      "Fail",
				"reinvocationPolicy": "IfNeeded",
				"matchConstraints":   celMatch(r, r.RoutesFor(r.CEL.MutationOperations()), tenantLabel),
				"matchConditions":    append(celMatchConditions(), map[string]any{"name": "not-a-controlled-replicaset", "expression": notAControlledReplicaSet}),
				"variables":          celVariables(r.CEL.MutationVariables, paramsRegistry, paramsManagers),
				"mutations":          mutations,
			},
		}, map[string]any{
			"apiVersion": "admissionregistration.k8s.io/v1",
			"kind":       "MutatingAdmissionPolicyBinding",
			"metadata":   map[string]any{"name": celPolicyName(r.ID)},
			"spec":       map[string]any{"policyName": celPolicyName(r.ID), "paramRef": paramRef()},
		})
	}
	return out
}
