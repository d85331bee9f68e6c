package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tenantguard/tenantguard/tests/fixtures"
)

// TestChartValuesTableIsCurrent holds the chart README's values table equal
// to values.schema.json's descriptions and values.yaml's defaults;
// UPDATE_GOLDEN=1 rewrites it.
func TestChartValuesTableIsCurrent(t *testing.T) {
	const begin, end = "<!-- values: begin (generated from values.schema.json, do not edit) -->\n", "<!-- values: end -->"
	var schema schemaNode
	readChartFile(t, "values.schema.json", &schema)
	var values map[string]any
	readChartFile(t, "values.yaml", &values)
	var table strings.Builder
	table.WriteString("| value | default | what it does |\n| --- | --- | --- |\n")
	schema.rows(t, &table, "", values)

	fixtures.GeneratedSection(t, filepath.Join(chartDir, "README.md"), begin, end, table.String(),
		"UPDATE_GOLDEN=1 go test ./tests/ -run TestChartValuesTableIsCurrent")
}

// schemaNode is what the table needs of a JSON schema.
type schemaNode struct {
	Description string                `json:"description"`
	Properties  map[string]schemaNode `json:"properties"`
	OneOf       []schemaNode          `json:"oneOf"`
}

// rows writes a row per value under path: an object with properties is
// its properties' rows (a oneOf, its object's), anything else one row.
// Every value needs a description.
func (n schemaNode) rows(t *testing.T, w *strings.Builder, path string, values map[string]any) {
	for _, alt := range n.OneOf {
		if len(alt.Properties) > 0 {
			alt.rows(t, w, path, values)
			return
		}
	}
	if len(n.Properties) == 0 {
		return
	}
	keys := make([]string, 0, len(n.Properties))
	for k := range n.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		child, p := n.Properties[k], strings.TrimPrefix(path+"."+k, ".")
		sub, _ := values[k].(map[string]any)
		if len(child.Properties) > 0 || len(child.OneOf) > 0 {
			child.rows(t, w, p, sub)
			continue
		}
		if child.Description == "" {
			t.Errorf("values.schema.json: %s has no description", p)
		}
		def, err := json.Marshal(values[k])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "| `%s` | `%s` | %s |\n", p, def, strings.ReplaceAll(child.Description, "|", "\\|"))
	}
}

func readChartFile(t *testing.T, name string, into any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}
