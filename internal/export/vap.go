package export

import (
	"github.com/tenantguard/tenantguard/internal/registry"
)

// The parameter kind the ValidatingAdmissionPolicies read the registry from.
const (
	ParamsGroup    = "policy.tenantguard.io"
	ParamsVersion  = "v1"
	ParamsKind     = "PolicyParameters"
	ParamsResource = "policyparameters"
	// ParamsName is the one parameter object every binding refers to.
	ParamsName = "tenantguard"
)

// VAP builds the admission policy library for reg: the
// CustomResourceDefinition of the parameter kind, the parameter object
// holding the compiled registry, for every rule CEL can express a
// ValidatingAdmissionPolicy and a binding named tenantguard-<rule> whose
// validationActions follow the registry's enforcement mode (Deny, Warn,
// Audit for dryrun), then for every rule whose CEL sets its defaults a
// MutatingAdmissionPolicy and a binding of the same name (mutatingPolicies).
// The policies read the registry from the parameter object only, so a
// registry change is one object to update.
func VAP(reg *registry.Snapshot, opts Options) (*Library, error) {
	cat, err := library(opts.Catalog)
	if err != nil {
		return nil, err
	}
	data, err := celRegistry(reg)
	if err != nil {
		return nil, err
	}
	lib := &Library{Coverage: celCoverage(cat, "ValidatingAdmissionPolicy", "MutatingAdmissionPolicy")}
	lib.Objects = append(lib.Objects, paramsCRD(), map[string]any{
		"apiVersion": ParamsGroup + "/" + ParamsVersion,
		"kind":       ParamsKind,
		"metadata":   map[string]any{"name": ParamsName},
		"registry":   data,
		"managers":   managersOrDefault(opts.Managers),
	})
	for _, r := range celRules(cat) {
		spec := celPolicySpec(r, reg.TenantLabel(), paramsRegistry, paramsManagers)
		spec["paramKind"] = paramKind()
		lib.Objects = append(lib.Objects, map[string]any{
			"apiVersion": "admissionregistration.k8s.io/v1",
			"kind":       "ValidatingAdmissionPolicy",
			"metadata":   map[string]any{"name": celPolicyName(r.ID)},
			"spec":       spec,
		}, map[string]any{
			"apiVersion": "admissionregistration.k8s.io/v1",
			"kind":       "ValidatingAdmissionPolicyBinding",
			"metadata":   map[string]any{"name": celPolicyName(r.ID)},
			"spec": map[string]any{
				"policyName":        celPolicyName(r.ID),
				"paramRef":          paramRef(),
				"validationActions": validationActions(mode(reg, r)),
			},
		})
	}
	lib.Objects = append(lib.Objects, mutatingPolicies(cat, reg.TenantLabel())...)
	return lib, nil
}

// What the policies read the registry and the managers from.
const (
	paramsRegistry = "params.registry"
	paramsManagers = "params.managers"
)

// paramKind is the policies' paramKind.
func paramKind() map[string]any {
	return map[string]any{"apiVersion": ParamsGroup + "/" + ParamsVersion, "kind": ParamsKind}
}

// paramRef is the bindings' paramRef: the one parameter object, without
// which every request the policy matches is refused.
func paramRef() map[string]any {
	return map[string]any{"name": ParamsName, "parameterNotFoundAction": "Deny"}
}

// paramsCRD defines the cluster-scoped parameter kind: the compiled registry
// (kept as is) and the managers' user names.
func paramsCRD() map[string]any {
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": ParamsResource + "." + ParamsGroup},
		"spec": map[string]any{
			"group": ParamsGroup,
			"scope": "Cluster",
			"names": map[string]any{"kind": ParamsKind, "listKind": ParamsKind + "List", "plural": ParamsResource, "singular": "policyparameters"},
			"versions": []any{map[string]any{
				"name": ParamsVersion, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type":        "object",
					"description": "The tenant registry as tenantguard's ValidatingAdmissionPolicies read it; written by `tenantguard export vap`.",
					"properties": map[string]any{
						"apiVersion": map[string]any{"type": "string"},
						"kind":       map[string]any{"type": "string"},
						"metadata":   map[string]any{"type": "object"},
						"registry":   map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true, "description": "the compiled tenant registry"},
						"managers":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "user names of tenantguard itself"},
					},
					"required": []any{"registry", "managers"},
				}},
			}},
		},
	}
}
