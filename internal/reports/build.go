package reports

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tenantguard/tenantguard/internal/audit"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// Source names tenantguard as the reports' and results' source.
const Source = "tenantguard"

// The results of a violation by mode: a deny-mode rule fails, a warn- or
// dryrun-mode rule warns (the mode is in the result's properties).
var results = map[string]string{registry.ModeDeny: "fail", registry.ModeWarn: "warn", registry.ModeDryRun: "warn"}

// Options name and label the reports.
type Options struct {
	Format Format
	// Name is every report's name (the instance's).
	Name string
	// Labels are every report's labels (the instance's).
	Labels map[string]string
	// Time is the audit's, the results' timestamp.
	Time time.Time
	// Errors are what kept the audit from checking some objects: the
	// cluster-scoped report lists each as a result "error" (policy
	// ErrorPolicy), so that one reading the reports knows they are not
	// whole.
	Errors []string
}

// ErrorPolicy is the policy of the results that say what the audit could
// not check.
const ErrorPolicy = "audit"

// Reports are the reports of rows, sorted as audit.Sort sorts them: one
// per namespace with rows of namespaced objects, and the cluster-scoped one
// of the rows of cluster-scoped objects (Namespaces) and of opts.Errors,
// under namespace "", first. A namespace without rows has no report: the
// caller prunes it. They are built one at a time, as they are asked for,
// each of a run of rows, which it does not copy: the caller that writes
// each before it asks for the next holds one report in memory at once.
func Reports(rows []audit.Row, opts Options) iter.Seq2[string, *unstructured.Unstructured] {
	return func(yield func(string, *unstructured.Unstructured) bool) {
		if len(opts.Errors) > 0 && (len(rows) == 0 || rows[0].Namespace != "") {
			if !yield("", report("", nil, opts)) {
				return
			}
		}
		for len(rows) > 0 {
			namespace, n := rows[0].Namespace, 1
			for n < len(rows) && rows[n].Namespace == namespace {
				n++
			}
			if !yield(namespace, report(namespace, rows[:n], opts)) {
				return
			}
			rows = rows[n:]
		}
	}
}

// MaxResults is the most results one report lists, and MaxResultBytes
// about the most text they take (their messages are what varies): etcd
// refuses an object over 1.5 MiB, and a namespace can hold thousands of
// violating objects (a Deployment, its ReplicaSets and their pods under a
// tightened rule). The summary counts every row; the report's
// LeftOutAnnotation says how many are not listed. Failures are listed first.
const (
	MaxResults     = 1000
	MaxResultBytes = 1 << 20
)

// fitting is how many of rows, from the first, one report lists: at most
// MaxResults, of MaxResultBytes at most.
func fitting(rows []audit.Row) int {
	size := 0
	for i := range rows {
		if size += resultBytes(&rows[i]); i == MaxResults || size > MaxResultBytes {
			return i
		}
	}
	return len(rows)
}

// resultBytes is about what a result of r takes in the report's JSON: its
// strings and 400 bytes of field names and fixed values.
func resultBytes(r *audit.Row) int {
	return 400 + len(r.Message) + len(r.Rule) + len(r.Mode) + len(r.Tenant) + len(r.APIVersion) + len(r.Kind) + len(r.Name) + len(r.Namespace) + len(r.UID)
}

// LeftOutAnnotation is the annotation that says, on a report of more rows
// than MaxResults, how many of them it does not list.
const LeftOutAnnotation = "tenantguard.io/results-left-out"

// report is one report of rows, all of namespace ("" is cluster-scoped).
func report(namespace string, rows []audit.Row, opts Options) *unstructured.Unstructured {
	summary := map[string]any{"pass": int64(0), "fail": int64(0), "warn": int64(0), "error": int64(0), "skip": int64(0)}
	for _, r := range rows {
		result := results[r.Mode]
		summary[result] = summary[result].(int64) + 1
	}
	leftOut := 0
	if n := fitting(rows); n < len(rows) {
		rows = slices.Clone(rows)
		slices.SortStableFunc(rows, func(a, b audit.Row) int { return cmp.Compare(results[a.Mode], results[b.Mode]) }) // fail before warn
		n = fitting(rows)
		leftOut, rows = len(rows)-n, rows[:n]
	}
	// Every result's timestamp, one value: the digest is taken with it
	// zero, then it is set.
	stamp := map[string]any{"seconds": int64(0), "nanos": int64(0)}
	items := make([]any, 0, len(rows))
	for _, r := range rows {
		result := results[r.Mode]
		resource := map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "name": r.Name}
		if r.Namespace != "" {
			resource["namespace"] = r.Namespace
		}
		if r.UID != "" {
			resource["uid"] = r.UID
		}
		properties := map[string]any{"mode": r.Mode}
		if r.Tenant != "" {
			properties["tenant"] = r.Tenant
		}
		items = append(items, map[string]any{
			"source":     Source,
			"policy":     r.Rule,
			"result":     result,
			"message":    r.Message,
			"scored":     result == "fail", // the CRDs' warn counts non-scored failures
			"severity":   cmp.Or(map[string]string{registry.ModeDeny: "high"}[r.Mode], "medium"),
			"timestamp":  stamp,
			"resources":  []any{resource},
			"properties": properties,
		})
	}
	if namespace == "" {
		for _, msg := range opts.Errors {
			summary["error"] = summary["error"].(int64) + 1
			items = append(items, map[string]any{
				"source":    Source,
				"policy":    ErrorPolicy,
				"result":    "error",
				"message":   msg,
				"scored":    false,
				"severity":  "high",
				"timestamp": stamp,
			})
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"summary": summary, "results": items}}
	u.SetGroupVersionKind(opts.Format.GVK(namespace == ""))
	u.SetName(opts.Name)
	u.SetNamespace(namespace)
	u.SetLabels(maps.Clone(opts.Labels))
	annotations := map[string]string{}
	if leftOut > 0 {
		annotations[LeftOutAnnotation] = strconv.Itoa(leftOut)
	}
	if opts.Format.source {
		u.Object["source"] = Source
	}
	u.SetAnnotations(annotations)
	annotations[DigestAnnotation] = digest(u)
	u.SetAnnotations(annotations)
	stamp["seconds"] = opts.Time.Unix()
	return u
}

// DigestAnnotation is the annotation that holds a digest of the report as
// written, its results' timestamps left out: the audit rewrites a report
// only when it would say something else.
const DigestAnnotation = "tenantguard.io/results-digest"

// digest is the SHA-256 of u's JSON, whose maps encoding/json writes with
// their keys sorted.
func digest(u *unstructured.Unstructured) string {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		panic(fmt.Sprintf("a report's JSON: %v", err)) // built above of strings, numbers, maps and slices
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
