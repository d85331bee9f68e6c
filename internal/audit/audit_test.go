package audit

import (
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/fixtures"
)

// auditor audits against the corpus registry and cluster.
func auditor(t *testing.T) *Auditor {
	t.Helper()
	reg, err := registry.Load(filepath.Join(fixtures.Dir(), "registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(t.Context(), reg, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	view := clusterview.New(reg.TenantLabel())
	objects, err := clusterview.LoadFile(fixtures.ClusterFile())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objects {
		view.Upsert(o)
	}
	return New(e, view, []string{"system:serviceaccount:tg:tenantguard"})
}

func object(kind, namespace, name string, labels map[string]any) *Object {
	metadata := map[string]any{"name": name}
	if namespace != "" {
		metadata["namespace"] = namespace
	}
	if labels != nil {
		metadata["labels"] = labels
	}
	return &Object{GVK: schema.GroupVersionKind{Version: "v1", Kind: kind}, Namespace: namespace, Name: name, Content: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": metadata}}
}

func TestTheAuditActsAsTheTenantsFirstOwner(t *testing.T) {
	a := auditor(t)
	tests := []struct {
		name       string
		object     *Object
		wantUser   string
		wantGroups []string
	}{
		{"a User owner by its name", object("Pod", "oil-dev", "web", nil), "alice", nil},
		{"a Group owner as a user in that group", object("Service", "gas-web", "web", nil), GroupMember, []string{"gas-team"}},
		{"a Namespace as the owner of the tenant it is labelled for", object("Namespace", "", "oil-new", map[string]any{"tenantguard.io/tenant": "oil"}), "alice", nil},
		{"a namespace of no tenant as the first administrator (a Group)", object("Namespace", "", "monitoring", nil), GroupMember, []string{"system:masters"}},
		{"a namespace of a tenant the registry lacks as the first administrator", object("Pod", "ghost-ns", "web", nil), GroupMember, []string{"system:masters"}},
		{"a companion as tenantguard itself, which writes it", object("ResourceQuota", "oil-dev", "tenantguard-quota", map[string]any{"app.kubernetes.io/managed-by": "tenantguard"}), "system:serviceaccount:tg:tenantguard", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user, groups := a.Requester(tt.object)
			if user != tt.wantUser || !slices.Equal(groups, tt.wantGroups) {
				t.Errorf("acts as %q %v, want %q %v", user, groups, tt.wantUser, tt.wantGroups)
			}
		})
	}
}

func TestTheAuditChecksNamespacesAndWhatTheRulesJudgeInTenantNamespaces(t *testing.T) {
	a := auditor(t)
	deleting := object("Pod", "oil-dev", "going", nil)
	deleting.Content["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-01T00:00:00Z"
	finished := object("Pod", "oil-dev", "job-1", nil)
	finished.Content["status"] = map[string]any{"phase": "Succeeded"}
	tests := []struct {
		name   string
		object *Object
		want   bool
	}{
		{"any Namespace", object("Namespace", "", "monitoring", nil), true},
		{"a Pod in a tenant namespace", object("Pod", "oil-dev", "web", nil), true},
		{"a counted PersistentVolumeClaim in a tenant namespace", object("PersistentVolumeClaim", "oil-dev", "data", nil), true},
		{"a Pod outside tenant namespaces", object("Pod", "monitoring", "exporter", nil), false},
		{"a ConfigMap, which only the cordon judges", object("ConfigMap", "oil-dev", "settings", nil), false},
		{"a Pod being deleted", deleting, false},
		{"a Pod that has finished", finished, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.Audits(tt.object); got != tt.want {
				t.Errorf("audited %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTheCreateCarriesNoMetadataTheAPIServerSets(t *testing.T) {
	o := object("Pod", "oil-dev", "web", nil)
	metadata := o.Content["metadata"].(map[string]any)
	for _, f := range apiServerFields {
		metadata[f] = "set"
	}
	o.Content["status"] = map[string]any{"phase": "Running"}
	body, err := o.createBody()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"oil-dev"},"status":{"phase":"Running"}}`
	if string(body) != want {
		t.Errorf("create body %s, want %s", body, want)
	}
	if metadata["uid"] != "set" {
		t.Error("the stored object was changed")
	}
}

func TestAScheduledPodIsNotJudgedForTheNodeTheSchedulerBoundItTo(t *testing.T) {
	o := object("Pod", "oil-dev", "web", nil)
	o.Content["spec"] = map[string]any{"nodeName": "node-7", "containers": []any{}}
	body, err := o.createBody()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"oil-dev"},"spec":{"containers":[]}}`; string(body) != want {
		t.Errorf("create body %s, want %s", body, want)
	}
	if o.Content["spec"].(map[string]any)["nodeName"] != "node-7" {
		t.Error("the stored object was changed")
	}
}
