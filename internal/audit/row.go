package audit

import (
	"cmp"
	"slices"

	"github.com/tenantguard/tenantguard/internal/registry"
)

// Row is one violation of one rule by one object.
type Row struct {
	// Namespace is "" for a Namespace (and any cluster-scoped object).
	Namespace  string `json:"namespace,omitempty"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	// UID is the object's uid, when it has one.
	UID string `json:"uid,omitempty"`
	// Tenant is the tenant the object's namespace (or the Namespace
	// itself) is labelled for, "" for none.
	Tenant string `json:"tenant,omitempty"`
	// Rule is the rule id, Mode its enforcement in force: deny, warn or
	// dryrun.
	Rule string `json:"rule"`
	Mode string `json:"mode"`
	// Message is the rule's message, without the [rule-id] prefix.
	Message string `json:"message"`
}

// Sort orders rows by namespace, kind, name, rule and message, then by
// every other field, so that equal rows are next to each other.
func Sort(rows []Row) {
	slices.SortFunc(rows, func(a, b Row) int {
		return cmp.Or(
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.APIVersion, b.APIVersion),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Message, b.Message),
			cmp.Compare(a.UID, b.UID), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Mode, b.Mode))
	})
}

// Denied reports whether any row is of a rule in deny mode.
func Denied(rows []Row) bool {
	return slices.ContainsFunc(rows, func(r Row) bool { return r.Mode == registry.ModeDeny })
}
