package engine

import (
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// Tenant is the registry tenant a request belongs to, for metrics and logs:
// a Namespace's by the tenant label it carries (the mutating webhook has set
// it on a create) or else has in the view; any other object's by its
// namespace's label in the view. "" when none, or when the label names no
// tenant of the registry: a label value a requester chose must not become a
// metric's label value.
func (e *Engine) Tenant(req *admission.Request, view *clusterview.View) string {
	name := e.labelledTenant(req, view)
	if _, known := e.registry.Tenant(name); !known {
		return ""
	}
	return strings.Clone(name) // the decoded string shares the request body
}

func (e *Engine) labelledTenant(req *admission.Request, view *clusterview.View) string {
	label := e.registry.TenantLabel()
	if req.Kind.Group == "" && req.Kind.Kind == "Namespace" {
		for _, obj := range []ast.Object{req.Object, req.OldObject} {
			if obj == nil {
				continue
			}
			if t, err := obj.Find(ast.Ref{ast.InternedTerm("metadata"), ast.InternedTerm("labels"), ast.InternedTerm(label)}); err == nil {
				if s, ok := t.(ast.String); ok {
					return string(s)
				}
			}
		}
		labels, _ := view.NamespaceLabels(req.Name)
		return labels.Get(label)
	}
	if req.Namespace == "" {
		return ""
	}
	labels, _ := view.NamespaceLabels(req.Namespace)
	return labels.Get(label)
}
