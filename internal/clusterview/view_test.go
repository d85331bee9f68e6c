package clusterview

import (
	"strings"
	"testing"
	"time"
)

const label = "tenantguard.io/tenant"

func ns(name, tenant string) Object {
	labels := map[string]string{}
	if tenant != "" {
		labels[label] = tenant
	}
	return Object{Kind: "Namespace", Resource: "namespaces", Name: name, Labels: labels}
}

func pod(namespace, name string) Object {
	return Object{Kind: "Pod", Resource: "pods", Namespace: namespace, Name: name}
}

func TestCountsFollowNamespacesAndObjects(t *testing.T) {
	tests := []struct {
		name     string
		steps    func(v *View)
		tenant   string
		key      string
		expected int
	}{
		{"pods are summed over a tenant's namespaces", func(v *View) {
			v.Upsert(ns("a", "oil"))
			v.Upsert(ns("b", "oil"))
			v.Upsert(pod("a", "1"))
			v.Upsert(pod("b", "2"))
		}, "oil", "pods", 2},
		{"repeated upserts count once", func(v *View) {
			v.Upsert(ns("a", "oil"))
			v.Upsert(pod("a", "1"))
			v.Upsert(pod("a", "1"))
		}, "oil", "pods", 1},
		{"deletes uncount, twice is harmless", func(v *View) {
			v.Upsert(ns("a", "oil"))
			v.Upsert(pod("a", "1"))
			v.Delete(pod("a", "1"))
			v.Delete(pod("a", "1"))
		}, "oil", "pods", 0},
		{"names that run together differently are different objects", func(v *View) {
			v.Upsert(ns("a", "oil"))
			v.Upsert(ns("a1", "oil"))
			v.Upsert(pod("a", "12"))
			v.Upsert(pod("a1", "2"))
			v.Delete(pod("a1", "2"))
		}, "oil", "pods", 1},
		{"objects seen before their namespace are counted when it arrives", func(v *View) {
			v.Upsert(pod("a", "1"))
			v.Upsert(ns("a", "oil"))
		}, "oil", "pods", 1},
		{"a namespace moving tenants takes its objects along", func(v *View) {
			v.Upsert(ns("a", "oil"))
			v.Upsert(pod("a", "1"))
			v.Upsert(ns("a", "gas"))
		}, "gas", "pods", 1},
		{"the old tenant loses what moved", func(v *View) {
			v.Upsert(ns("a", "oil"))
			v.Upsert(pod("a", "1"))
			v.Upsert(ns("a", "gas"))
		}, "oil", "pods", 0},
		{"namespaces are counted per tenant", func(v *View) {
			v.Upsert(ns("a", "oil"))
			v.Upsert(ns("b", "oil"))
			v.Upsert(ns("c", ""))
			v.Delete(ns("b", "oil"))
		}, "oil", NamespacesKey, 1},
		{"grouped resources use count keys", func(v *View) {
			v.Upsert(ns("a", "oil"))
			v.Upsert(Object{Group: "apps", Kind: "Deployment", Resource: "deployments", Namespace: "a", Name: "d"})
		}, "oil", "count/deployments.apps", 1},
		{"changing the tenant label recomputes counts", func(v *View) {
			v.Upsert(Object{Kind: "Namespace", Name: "a", Labels: map[string]string{"team": "oil"}})
			v.Upsert(pod("a", "1"))
			v.SetTenantLabel("team")
		}, "oil", "pods", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := New(label)
			tt.steps(v)
			if got := v.Count(tt.tenant, tt.key); got != tt.expected {
				t.Errorf("Count(%q, %q) = %d, want %d", tt.tenant, tt.key, got, tt.expected)
			}
		})
	}
}

func TestParseReadsDocumentsListsAndArrays(t *testing.T) {
	text := `apiVersion: v1
kind: Namespace
metadata: {name: a, labels: {tenantguard.io/tenant: oil}}
---
apiVersion: v1
kind: PodList
items:
  - {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: a}}
---
[{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"}, "value": 7}]
---
`
	objects, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(objects) != 3 {
		t.Fatalf("got %d objects: %+v", len(objects), objects)
	}
	v := New(label)
	for _, o := range objects {
		v.Upsert(o)
	}
	if v.Count("oil", "pods") != 1 {
		t.Error("the pod is not counted")
	}
	if pc, ok := v.PriorityClass("low"); !ok || pc.Value != 7 {
		t.Errorf("priority class = %+v, %v", pc, ok)
	}
	if labels, ok := v.NamespaceLabels("a"); !ok || labels.Get(label) != "oil" {
		t.Errorf("labels = %v", labels)
	}
}

func TestParseRefusesObjectsWithoutIdentity(t *testing.T) {
	for _, text := range []string{"kind: Pod\nmetadata: {name: p}", "apiVersion: v1\nkind: Pod\n", "42"} {
		if _, err := Parse([]byte(text)); err == nil || !strings.Contains(err.Error(), "document 1") {
			t.Errorf("Parse(%q) = %v, want an error naming the document", text, err)
		}
	}
	// A syntax error names its line in the file instead.
	if _, err := Parse([]byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\nb: [\n")); err == nil || !strings.Contains(err.Error(), "line 5: ") {
		t.Errorf("a syntax error: %v, want it at line 5", err)
	}
}

func TestPodsResourceQuotaNoLongerCountsAreLeftOutOfTheView(t *testing.T) {
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	tests := []struct {
		name     string
		metadata string // added to the pod's metadata
		phase    string
		counted  bool
	}{
		{"a running pod counts", "", "Running", true},
		{"a pod that has not started counts", "", "", true},
		{"a pod that succeeded does not", "", "Succeeded", false},
		{"a pod that failed does not", "", "Failed", false},
		{"a pod past the grace period of its deletion does not", `, deletionTimestamp: "2026-01-01T00:00:00Z", deletionGracePeriodSeconds: 30`, "Running", false},
		{"a pod within the grace period of its deletion counts", `, deletionTimestamp: "` + soon + `", deletionGracePeriodSeconds: 30`, "Running", true},
	}
	const spec = "spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// the pod as it was, running, then as it is
			text := "{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: a}, " + spec + "}\n---\n" +
				"{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: a" + tt.metadata + "}, " + spec + ", status: {phase: \"" + tt.phase + "\"}}\n"
			objects, err := Parse([]byte(text))
			if err != nil {
				t.Fatal(err)
			}
			v := New(label)
			v.Upsert(ns("a", "oil"))
			for _, o := range objects {
				v.Upsert(o)
			}
			pods, cpu := 0, int64(0)
			if tt.counted {
				pods, cpu = 1, 100
			}
			if got := v.Count("oil", "pods"); got != pods {
				t.Errorf("pods = %d, want %d", got, pods)
			}
			if got := v.Used("oil", "requests.cpu"); got != cpu {
				t.Errorf("requests.cpu = %d, want %d", got, cpu)
			}
		})
	}
}

func TestTenantNamespacesAreTheNamespacesLabelledForATenant(t *testing.T) {
	v := New(label)
	v.Upsert(ns("oil-prod", "oil"))
	v.Upsert(ns("kube-system", ""))
	v.Upsert(ns("gas-dev", "gas"))
	v.Upsert(ns("oil-dev", "oil"))
	v.Upsert(ns("oil-dev", "")) // relabelled out of its tenant
	var got []string
	for _, n := range v.TenantNamespaces() {
		if n.Labels.Get(label) == "" || !n.Labels.Has(label) {
			t.Errorf("%s listed without the tenant label: %v", n.Name, n.Labels)
		}
		got = append(got, n.Name)
	}
	if strings.Join(got, ",") != "gas-dev,oil-prod" {
		t.Fatalf("tenant namespaces %v, want gas-dev and oil-prod, by name", got)
	}
	v.SetTenantLabel("other")
	if n := v.TenantNamespaces(); len(n) != 0 {
		t.Fatalf("tenant namespaces %v under a label none carries", n)
	}
}
