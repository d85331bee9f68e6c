package reports

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tenantguard/tenantguard/internal/audit"
)

// Rows are the rows a report lists, read back from its results: those
// Reports wrote it of, less the rows a report of more than MaxResults
// leaves out and the results that say what the audit could not check. A
// result that names no object, no rule or no mode tenantguard writes (one
// edited by hand) is left out.
func Rows(u *unstructured.Unstructured) []audit.Row {
	items, _, _ := unstructured.NestedSlice(u.Object, "results")
	rows := make([]audit.Row, 0, len(items))
	for _, item := range items {
		result, _ := item.(map[string]any)
		resources, _, _ := unstructured.NestedSlice(result, "resources")
		if len(resources) != 1 {
			continue
		}
		resource, _ := resources[0].(map[string]any)
		r := audit.Row{
			Namespace: text(resource, "namespace"), APIVersion: text(resource, "apiVersion"), Kind: text(resource, "kind"),
			Name: text(resource, "name"), UID: text(resource, "uid"),
			Tenant: text(result, "properties", "tenant"), Rule: text(result, "policy"), Mode: text(result, "properties", "mode"),
			Message: text(result, "message"),
		}
		if _, written := results[r.Mode]; !written || r.Rule == "" || r.Rule == ErrorPolicy || r.APIVersion == "" || r.Kind == "" || r.Name == "" {
			continue
		}
		rows = append(rows, r)
	}
	return rows
}

// text is the string at path in m, "" for none.
func text(m map[string]any, path ...string) string {
	s, _, _ := unstructured.NestedString(m, path...)
	return s
}
