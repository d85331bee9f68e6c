package reports

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tenantguard/tenantguard/internal/audit"
)

var rows = []audit.Row{
	{Namespace: "oil-dev", APIVersion: "v1", Kind: "Pod", Name: "debug", UID: "u1", Tenant: "oil", Rule: "host-path", Mode: "deny", Message: "no"},
	{Namespace: "oil-dev", APIVersion: "apps/v1", Kind: "Deployment", Name: "edge", Tenant: "oil", Rule: "host-network", Mode: "warn", Message: "careful"},
	{Namespace: "gas-web", APIVersion: "v1", Kind: "Service", Name: "web", Tenant: "gas", Rule: "service-type", Mode: "dryrun", Message: "later"},
	{APIVersion: "v1", Kind: "Namespace", Name: "gas-three", Tenant: "gas", Rule: "namespace-quota", Mode: "deny", Message: "too many"},
}

// build is every report of rows, sorted first, by namespace.
func build(rows []audit.Row, opts Options) map[string]*unstructured.Unstructured {
	rows = slices.Clone(rows)
	audit.Sort(rows)
	return maps.Collect(Reports(rows, opts))
}

func TestEveryNamespaceWithViolationsGetsOneReportAndNamespacesTheClusterOne(t *testing.T) {
	for _, format := range Formats {
		t.Run(format.Name, func(t *testing.T) {
			built := build(rows, Options{Format: format, Name: "tenantguard", Labels: map[string]string{"app.kubernetes.io/managed-by": "tenantguard"}, Time: time.Unix(1700000000, 0)})
			tests := []struct {
				name                   string
				namespace, kind        string
				fail, warn, results    int64
				firstPolicy, firstKind string
			}{
				{"oil-dev's report holds its two rows", "oil-dev", format.Kind, 1, 1, 2, "host-network", "Deployment"}, // audit.Sort's order
				{"gas-web's dryrun row warns", "gas-web", format.Kind, 0, 1, 1, "service-type", "Service"},
				{"the cluster-scoped report holds the Namespaces", "", format.ClusterKind, 1, 0, 1, "namespace-quota", "Namespace"},
			}
			if len(built) != len(tests) {
				t.Fatalf("%d reports, want %d", len(built), len(tests))
			}
			for _, tt := range tests {
				r := built[tt.namespace]
				if r == nil {
					t.Fatalf("%s: no report", tt.name)
				}
				if r.GetKind() != tt.kind || r.GetAPIVersion() != format.GroupVersion.String() || r.GetName() != "tenantguard" || r.GetNamespace() != tt.namespace || r.GetLabels()["app.kubernetes.io/managed-by"] != "tenantguard" {
					t.Errorf("%s: %s %s/%s in %q labelled %v", tt.name, r.GetAPIVersion(), r.GetKind(), r.GetName(), r.GetNamespace(), r.GetLabels())
				}
				fail, _, _ := unstructured.NestedInt64(r.Object, "summary", "fail")
				warn, _, _ := unstructured.NestedInt64(r.Object, "summary", "warn")
				results, _, _ := unstructured.NestedSlice(r.Object, "results")
				if fail != tt.fail || warn != tt.warn || int64(len(results)) != tt.results {
					t.Errorf("%s: fail %d warn %d results %d, want %d %d %d", tt.name, fail, warn, len(results), tt.fail, tt.warn, tt.results)
				}
				first := results[0].(map[string]any)
				resource := first["resources"].([]any)[0].(map[string]any)
				if first["policy"] != tt.firstPolicy || resource["kind"] != tt.firstKind || first["source"] != Source {
					t.Errorf("%s: first result %v", tt.name, first)
				}
				for _, item := range results {
					result := item.(map[string]any)
					if scored := result["result"] == "fail"; result["scored"] != scored {
						t.Errorf("%s: a %s result scored %v, want %t: the summary's warn counts non-scored failures", tt.name, result["result"], result["scored"], scored)
					}
				}
				if _, has := r.Object["source"]; has != (format.Name == "openreports") {
					t.Errorf("%s: report-level source %v; only openreports.io has the field", tt.name, has)
				}
			}
		})
	}
}

func TestAReportListsAtMostMaxResultsFailuresFirstAndCountsEveryRow(t *testing.T) {
	var many []audit.Row
	for i := range MaxResults + 500 {
		mode := "warn"
		if i%3 == 0 {
			mode = "deny"
		}
		many = append(many, audit.Row{Namespace: "oil-dev", APIVersion: "v1", Kind: "Pod", Name: fmt.Sprintf("p%d", i), Rule: "host-path", Mode: mode, Message: "no"})
	}
	r := build(many, Options{Format: Formats[0], Name: "tenantguard", Time: time.Unix(1700000000, 0)})["oil-dev"]
	fail, _, _ := unstructured.NestedInt64(r.Object, "summary", "fail")
	warn, _, _ := unstructured.NestedInt64(r.Object, "summary", "warn")
	results, _, _ := unstructured.NestedSlice(r.Object, "results")
	if fail != 500 || warn != 1000 {
		t.Errorf("summary fail %d warn %d, want every row: 500 and 1000", fail, warn)
	}
	if len(results) != MaxResults || r.GetAnnotations()[LeftOutAnnotation] != "500" {
		t.Errorf("%d results, %s=%q; want %d and 500", len(results), LeftOutAnnotation, r.GetAnnotations()[LeftOutAnnotation], MaxResults)
	}
	listed := 0
	for _, x := range results {
		if x.(map[string]any)["result"] == "fail" {
			listed++
		}
	}
	if listed != 500 {
		t.Errorf("%d failures listed, want all 500 before the warnings", listed)
	}
	if r := build(rows, Options{Format: Formats[0]})["oil-dev"]; r.GetAnnotations()[LeftOutAnnotation] != "" {
		t.Errorf("a report under MaxResults says %v", r.GetAnnotations())
	}
}

func TestAReportOfLongMessagesStaysUnderWhatEtcdTakes(t *testing.T) {
	long := strings.Repeat("an allowed registry, ", 100) // 2,100 bytes
	var many []audit.Row
	for i := range MaxResults {
		many = append(many, audit.Row{Namespace: "oil-dev", APIVersion: "v1", Kind: "Pod", Name: fmt.Sprintf("p%d", i), Rule: "image-registry", Mode: "deny", Message: long})
	}
	r := build(many, Options{Format: Formats[0], Name: "tenantguard", Time: time.Unix(1700000000, 0)})["oil-dev"]
	text, err := json.Marshal(r.Object)
	if err != nil {
		t.Fatal(err)
	}
	results, _, _ := unstructured.NestedSlice(r.Object, "results")
	if len(text) > 1536*1024 || len(results) == 0 || len(results) == MaxResults {
		t.Errorf("%d results in %d bytes of JSON; want some, not all, under etcd's 1.5 MiB", len(results), len(text))
	}
	if left := r.GetAnnotations()[LeftOutAnnotation]; left != strconv.Itoa(MaxResults-len(results)) {
		t.Errorf("%s=%q with %d of %d listed", LeftOutAnnotation, left, len(results), MaxResults)
	}
}

func TestAFormatIsNamedByItsFlagValue(t *testing.T) {
	for _, name := range []string{"openreports", "wgpolicyk8s"} {
		if f, err := FormatNamed(name); err != nil || f.Name != name {
			t.Errorf("%s: %v %v", name, f, err)
		}
	}
	if _, err := FormatNamed("policyreport"); err == nil {
		t.Error("an unknown format is accepted")
	}
}

func TestReportsComeOneAtATimeInTheOrderOfTheirNamespaces(t *testing.T) {
	sorted := slices.Clone(rows)
	audit.Sort(sorted)
	for _, tt := range []struct {
		name   string
		rows   []audit.Row
		errors []string
		want   []string
	}{
		{"rows of three namespaces, the cluster's among them", sorted, nil, []string{"", "gas-web", "oil-dev"}},
		{"errors and no cluster-scoped row", sorted[1:], []string{"not listed"}, []string{"", "gas-web", "oil-dev"}},
		{"errors alone", nil, []string{"not listed"}, []string{""}},
		{"nothing", nil, nil, nil},
	} {
		var namespaces []string
		for namespace, report := range Reports(tt.rows, Options{Format: Formats[0], Name: "tenantguard", Errors: tt.errors}) {
			if report.GetNamespace() != namespace {
				t.Errorf("%s: the report of namespace %q is in %q", tt.name, namespace, report.GetNamespace())
			}
			namespaces = append(namespaces, namespace)
		}
		if !slices.Equal(namespaces, tt.want) {
			t.Errorf("%s: namespaces %q, want %q", tt.name, namespaces, tt.want)
		}
	}
	for namespace := range Reports(sorted, Options{Format: Formats[0]}) {
		if namespace != "" {
			t.Errorf("a report built after the caller stopped: %q", namespace)
		}
		break
	}
}

// TestAReportsDigestChangesWithWhatItSaysNotWithTheAuditsTime: the digest
// the audit compares before writing a report again.
func TestAReportsDigestChangesWithWhatItSaysNotWithTheAuditsTime(t *testing.T) {
	opts := Options{Format: OpenReports, Name: "tenantguard", Time: time.Unix(1700000000, 0)}
	digest := func(rows []audit.Row, opts Options) string {
		r := build(rows, opts)["oil-dev"]
		if seconds, _, _ := unstructured.NestedInt64(r.Object["results"].([]any)[0].(map[string]any), "timestamp", "seconds"); seconds != opts.Time.Unix() {
			t.Fatalf("a result's timestamp is %d, want the audit's %d", seconds, opts.Time.Unix())
		}
		return r.GetAnnotations()[DigestAnnotation]
	}
	was := digest(rows, opts)
	if len(was) != 64 {
		t.Fatalf("digest %q, want a SHA-256 in hex", was)
	}
	later := opts
	later.Time = opts.Time.Add(time.Hour)
	renamed := slices.Clone(rows)
	renamed[0].Message = "no, not that path"
	labelled := opts
	labelled.Labels = map[string]string{"team": "platform"}
	for _, tt := range []struct {
		name string
		rows []audit.Row
		opts Options
		same bool
	}{
		{"the same rows an hour later have the same digest", rows, later, true},
		{"a row whose message changed changes it", renamed, opts, false},
		{"a row fewer changes it", rows[1:], opts, false},
		{"other labels change it", rows, labelled, false},
	} {
		if got := digest(tt.rows, tt.opts); (got == was) != tt.same {
			t.Errorf("%s: %s against %s", tt.name, got, was)
		}
	}
}

// TestAReportsRowsReadBackAreTheRowsItWasBuiltOf: what the audit carries
// over of what it could not check is read back from the reports.
func TestAReportsRowsReadBackAreTheRowsItWasBuiltOf(t *testing.T) {
	for _, format := range Formats {
		t.Run(format.Name, func(t *testing.T) {
			sorted := slices.Clone(rows)
			audit.Sort(sorted)
			var read []audit.Row
			for _, r := range Reports(sorted, Options{Format: format, Name: "tenantguard", Time: time.Unix(1700000000, 0), Errors: []string{"services is forbidden"}}) {
				read = append(read, Rows(r)...)
			}
			if !slices.Equal(read, sorted) {
				t.Errorf("read back %v, want %v (the error result left out)", read, sorted)
			}
		})
	}
}

func TestResultsEditedByHandAreNotReadBackAsRows(t *testing.T) {
	tests := []struct {
		name   string
		result map[string]any
	}{
		{"one without its object", map[string]any{"policy": "host-path", "properties": map[string]any{"mode": "deny"}}},
		{"one of two objects", map[string]any{"policy": "host-path", "properties": map[string]any{"mode": "deny"}, "resources": []any{
			map[string]any{"apiVersion": "v1", "kind": "Pod", "name": "a"}, map[string]any{"apiVersion": "v1", "kind": "Pod", "name": "b"}}}},
		{"one without a rule", map[string]any{"properties": map[string]any{"mode": "deny"}, "resources": []any{map[string]any{"apiVersion": "v1", "kind": "Pod", "name": "a"}}}},
		{"one of a mode tenantguard does not write", map[string]any{"policy": "host-path", "properties": map[string]any{"mode": "audit"}, "resources": []any{map[string]any{"apiVersion": "v1", "kind": "Pod", "name": "a"}}}},
		{"one whose object has no name", map[string]any{"policy": "host-path", "properties": map[string]any{"mode": "deny"}, "resources": []any{map[string]any{"apiVersion": "v1", "kind": "Pod"}}}},
		{"one that is not an object", map[string]any{"policy": "host-path", "properties": map[string]any{"mode": "deny"}, "resources": []any{"Pod/a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"results": []any{tt.result}}}
			if got := Rows(u); len(got) != 0 {
				t.Errorf("read back %v, want nothing", got)
			}
		})
	}
}
