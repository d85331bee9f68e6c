package export

import (
	"github.com/tenantguard/tenantguard/internal/registry"
)

// Kyverno builds the Kyverno library for reg: one ValidatingPolicy
// (policies.kyverno.io/v1, Kyverno's CEL policy type) per rule CEL can
// express, named tenantguard-<rule>, with the registry's enforcement mode
// as its validationActions. The CEL is the ValidatingAdmissionPolicy's; the
// registry is a literal variable, since ValidatingPolicy takes no parameter
// objects. Background scans are off: the rules judge requests (who sends
// them, what changes), not stored objects. Autogen is off too: the
// policies already match every pod controller themselves.
func Kyverno(reg *registry.Snapshot, opts Options) (*Library, error) {
	cat, err := library(opts.Catalog)
	if err != nil {
		return nil, err
	}
	data, err := celRegistry(reg)
	if err != nil {
		return nil, err
	}
	registryExpr, managersExpr := celLiteral(data), celLiteral(managersOrDefault(opts.Managers))
	lib := &Library{Coverage: celCoverage(cat, "ValidatingPolicy", "")}
	for _, r := range celRules(cat) {
		spec := celPolicySpec(r, reg.TenantLabel(), registryExpr, managersExpr)
		spec["validationActions"] = validationActions(mode(reg, r))
		spec["evaluation"] = map[string]any{"admission": map[string]any{"enabled": true}, "background": map[string]any{"enabled": false}}
		spec["autogen"] = map[string]any{"podControllers": map[string]any{"controllers": []any{}}}
		lib.Objects = append(lib.Objects, map[string]any{
			"apiVersion": "policies.kyverno.io/v1",
			"kind":       "ValidatingPolicy",
			"metadata":   map[string]any{"name": celPolicyName(r.ID)},
			"spec":       spec,
		})
	}
	return lib, nil
}
