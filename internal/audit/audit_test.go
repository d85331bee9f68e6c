package audit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"unsafe"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/jsonast"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/rego"
	"github.com/tenantguard/tenantguard/tests/fixtures"
)

// auditor audits against the corpus registry and cluster.
func auditor(t *testing.T) *Auditor {
	t.Helper()
	return auditorOf(t, nil, []string{"system:serviceaccount:tg:tenantguard"})
}

// auditorOf audits with the rule library cat (nil: the embedded one)
// against the corpus registry and cluster.
func auditorOf(t *testing.T, cat *catalog.Catalog, managers []string) *Auditor {
	t.Helper()
	reg, err := registry.Load(filepath.Join(fixtures.Dir(), "registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(t.Context(), reg, engine.Options{PolicyOptions: engine.PolicyOptions{Catalog: cat}})
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
	return New(e, view, managers)
}

// object is an object of the core group as stored, each edit applied to it
// as decoded JSON.
func object(t *testing.T, kind, namespace, name string, labels map[string]any, edits ...func(content, metadata map[string]any)) *Object {
	t.Helper()
	metadata := map[string]any{"name": name}
	if namespace != "" {
		metadata["namespace"] = namespace
	}
	if labels != nil {
		metadata["labels"] = labels
	}
	content := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": metadata}
	for _, edit := range edits {
		edit(content, metadata)
	}
	o, err := FromMap(schema.GroupVersionKind{Version: "v1", Kind: kind}, content)
	if err != nil {
		t.Fatal(err)
	}
	return &o
}

// workload is an object of an API group's kind in oil-dev, of the JSON
// given (its metadata's name and namespace added).
func workload(t *testing.T, group, kind, content string) *Object {
	t.Helper()
	var c map[string]any
	if err := json.Unmarshal([]byte(content), &c); err != nil {
		t.Fatal(err)
	}
	metadata, _ := c["metadata"].(map[string]any)
	if metadata == nil {
		metadata = map[string]any{}
		c["metadata"] = metadata
	}
	metadata["name"], metadata["namespace"] = "web", "oil-dev"
	o, err := FromMap(schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}, c)
	if err != nil {
		t.Fatal(err)
	}
	return &o
}

func TestTheAuditActsAsTheTenantsFirstOwner(t *testing.T) {
	a := auditor(t)
	tests := []struct {
		name       string
		object     *Object
		wantUser   string
		wantGroups []string
	}{
		{"a User owner by its name", object(t, "Pod", "oil-dev", "web", nil), "alice", nil},
		{"a Group owner as a user in that group", object(t, "Service", "gas-web", "web", nil), GroupMember, []string{"gas-team"}},
		{"a Namespace as the owner of the tenant it is labelled for", object(t, "Namespace", "", "oil-new", map[string]any{"tenantguard.io/tenant": "oil"}), "alice", nil},
		{"a namespace of no tenant as the first administrator (a Group)", object(t, "Namespace", "", "monitoring", nil), GroupMember, []string{"system:masters"}},
		{"a namespace of a tenant the registry lacks as the first administrator", object(t, "Pod", "ghost-ns", "web", nil), GroupMember, []string{"system:masters"}},
		{"a companion as tenantguard itself, which writes it", object(t, "ResourceQuota", "oil-dev", "tenantguard-quota", map[string]any{"app.kubernetes.io/managed-by": "tenantguard"}), "system:serviceaccount:tg:tenantguard", nil},
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

// TestTheAuditActsAsAnOwnerWhoIsNoAdministrator: acting as an owner who is
// also an administrator, the audit would pass every rule administrators
// pass (protected namespaces, hostname collisions) and miss their rows.
func TestTheAuditActsAsAnOwnerWhoIsNoAdministrator(t *testing.T) {
	for _, tt := range []struct {
		name, owners, want string
	}{
		{"the first owner who is no administrator", "[{kind: Group, name: platform-admins}, {kind: User, name: root}, {kind: User, name: alice}]", "alice"},
		{"the first owner when all are administrators", "[{kind: Group, name: platform-admins}, {kind: User, name: root}]", GroupMember},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := registry.Parse("r.yaml", []byte("apiVersion: tenantguard.io/v1\nkind: TenantRegistry\nsettings:\n  administrators: [{kind: Group, name: platform-admins}, {kind: User, name: root}]\ntenants:\n  - name: oil\n    owners: "+tt.owners+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			e, err := engine.New(t.Context(), reg, engine.Options{})
			if err != nil {
				t.Fatal(err)
			}
			view := clusterview.New(reg.TenantLabel())
			view.Upsert(clusterview.Object{Kind: "Namespace", Resource: "namespaces", Name: "oil-dev", Labels: map[string]string{reg.TenantLabel(): "oil"}})
			if user, _ := New(e, view, nil).Requester(object(t, "Pod", "oil-dev", "web", nil)); user != tt.want {
				t.Errorf("acts as %q, want %q", user, tt.want)
			}
		})
	}
}

func TestTheAuditChecksNamespacesAndWhatTheRulesJudgeInTenantNamespaces(t *testing.T) {
	a := auditor(t)
	deleting := object(t, "Pod", "oil-dev", "going", nil, func(_, metadata map[string]any) { metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z" })
	finished := object(t, "Pod", "oil-dev", "job-1", nil, func(content, _ map[string]any) { content["status"] = map[string]any{"phase": "Succeeded"} })
	tests := []struct {
		name   string
		object *Object
		want   bool
	}{
		{"any Namespace", object(t, "Namespace", "", "monitoring", nil), true},
		{"a Pod in a tenant namespace", object(t, "Pod", "oil-dev", "web", nil), true},
		{"a counted PersistentVolumeClaim in a tenant namespace", object(t, "PersistentVolumeClaim", "oil-dev", "data", nil), true},
		{"a Pod outside tenant namespaces", object(t, "Pod", "monitoring", "exporter", nil), false},
		{"a ConfigMap, which only the cordon judges", object(t, "ConfigMap", "oil-dev", "settings", nil), false},
		{"a Pod being deleted", deleting, false},
		{"a Pod that has finished", finished, false},
		{"a Deployment's old ReplicaSet, scaled to zero", workload(t, "apps", "ReplicaSet", `{"metadata":{"ownerReferences":[{"kind":"Deployment","name":"web","controller":true}]},"spec":{"replicas":0}}`), false},
		{"a Deployment's current ReplicaSet", workload(t, "apps", "ReplicaSet", `{"metadata":{"ownerReferences":[{"kind":"Deployment","name":"web","controller":true}]},"spec":{"replicas":2}}`), true},
		{"a ReplicaSet of its own, scaled to zero", workload(t, "apps", "ReplicaSet", `{"spec":{"replicas":0}}`), true},
		{"a Job that has completed", workload(t, "batch", "Job", `{"status":{"conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True"}]}}`), false},
		{"a Job that has failed", workload(t, "batch", "Job", `{"status":{"conditions":[{"type":"Failed","status":"True"}]}}`), false},
		{"a Job running", workload(t, "batch", "Job", `{"status":{"active":1}}`), true},
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
	o := object(t, "Pod", "oil-dev", "web", nil, func(content, metadata map[string]any) {
		for f := range apiServerFields {
			metadata[f] = "set"
		}
		content["status"] = map[string]any{"phase": "Running"}
	})
	want := ast.MustParseTerm(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"oil-dev"},"status":{"phase":"Running"}}`).Value
	if got := o.createObject(); got.Compare(want) != 0 {
		t.Errorf("create body %v, want %v", got, want)
	}
	if o.uid() != "set" {
		t.Error("the stored object was changed")
	}
}

func TestAScheduledPodIsNotJudgedForTheNodeTheSchedulerBoundItTo(t *testing.T) {
	o := object(t, "Pod", "oil-dev", "web", nil, func(content, _ map[string]any) {
		content["spec"] = map[string]any{"nodeName": "node-7", "containers": []any{}}
	})
	want := ast.MustParseTerm(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"oil-dev"},"spec":{"containers":[]}}`).Value
	if got := o.createObject(); got.Compare(want) != 0 {
		t.Errorf("create body %v, want %v", got, want)
	}
	if spec := jsonast.ObjectAt(o.Value, keySpec); jsonast.StringAt(spec, keyNodeName) != "node-7" {
		t.Error("the stored object was changed")
	}
}

func TestAListItemWithoutItsKindIsCreatedWithTheKindListed(t *testing.T) {
	v, err := jsonast.Parse([]byte(`{"metadata":{"name":"web","namespace":"oil-dev","uid":"u1"},"spec":{"nodeName":"n"}}`))
	if err != nil {
		t.Fatal(err)
	}
	o := ObjectOf(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, v.(ast.Object))
	if o.Namespace != "oil-dev" || o.Name != "web" {
		t.Fatalf("the object is %q in %q, want web in oil-dev, as its metadata says", o.Name, o.Namespace)
	}
	want := ast.MustParseTerm(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"oil-dev"},"spec":{"nodeName":"n"}}`).Value
	if got := o.createObject(); got.Compare(want) != 0 {
		t.Errorf("create body %v, want %v (a Deployment's spec.nodeName is not a pod's)", got, want)
	}
}

func TestARowKeepsNoneOfTheTextItsObjectWasDecodedFrom(t *testing.T) {
	// A list's page decodes into strings that share its text: a row
	// sharing one would keep the whole page alive until the reports are
	// written.
	a := auditor(t)
	data := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"debug","namespace":"oil-dev","uid":"uid-1"},` +
		`"spec":{"containers":[{"name":"sh","image":"busybox","volumeMounts":[{"name":"root","mountPath":"/host"}]}],"volumes":[{"name":"root","hostPath":{"path":"/"}}]}}`)
	v, err := jsonast.NewCache(16).ParsePaths(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := ObjectOf(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, v.(ast.Object))
	rows, err := a.Check(t.Context(), &o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("no row: the pod was meant to be refused its host path")
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	for _, r := range rows {
		for name, s := range map[string]string{"namespace": r.Namespace, "name": r.Name, "uid": r.UID, "tenant": r.Tenant, "message": r.Message} {
			if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); len(s) > 0 && p >= start && p < start+uintptr(len(data)) {
				t.Errorf("the row's %s %q shares the decoded text", name, s)
			}
		}
	}
}

// TestTheDocumentedRecipeGetsEveryAuditedResource holds docs/cli.md's
// recipe, the `kubectl get` that collects a cluster for the audit, to the
// resources the audit checks: a kind it leaves out has no rows.
func TestTheDocumentedRecipeGetsEveryAuditedResource(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, recipes, _ := strings.Cut(string(doc), "### Recipes")
	recipes, _, _ = strings.Cut(recipes, "\n### ")
	got := map[string]bool{}
	for line := range strings.SplitSeq(recipes, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[0] != "kubectl" || fields[1] != "get" {
			continue
		}
		for name := range strings.SplitSeq(fields[2], ",") {
			got[name] = true
		}
	}
	if len(got) == 0 {
		t.Fatal("docs/cli.md's recipes have no kubectl get")
	}
	want := append([]string{"namespaces"}, func() (names []string) {
		for _, gr := range auditor(t).Resources() {
			names = append(names, gr.String())
		}
		return names
	}()...)
	// kubectl names the resources of Kubernetes' own groups without them
	builtIn := map[string]bool{"": true, "apps": true, "batch": true, "networking.k8s.io": true}
	for _, name := range want {
		resource, group, _ := strings.Cut(name, ".")
		if shortened := builtIn[group] && got[resource]; !got[name] && !shortened {
			t.Errorf("docs/cli.md's recipe does not get %s, which the audit checks", name)
		}
	}
}

// TestAKindARuleNamesWithItsResourceIsAudited: a rule family of one's own
// may name a kind's resource when its name does not give it (a CRD's
// Cactus served as cacti, not cactuses); the audit then checks that kind's
// objects too.
func TestAKindARuleNamesWithItsResourceIsAudited(t *testing.T) {
	cat, err := catalog.LoadOverlay(rego.FS(), fstest.MapFS{"cacti.rego": {Data: []byte(`# METADATA
# title: Cacti
# description: Tenants grow no cacti.
# custom:
#   kinds: [{kind: example.com/Cactus, resource: cacti}]
#   operations: [CREATE, UPDATE]
#   engines: [opa]
package tenantguard.rules.cacti

import data.tenantguard.lib.tenancy

# METADATA
# title: No cacti
# description: No Cactus in tenant namespaces.
# custom:
#   id: no-cacti
violations contains {"id": "no-cacti", "msg": msg} if {
	tenancy.in_tenant_namespace
	msg := sprintf("Cactus %q grows in a namespace of tenant %q, which grows none", [tenancy.object_name, tenancy.namespace_tenant])
}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	a := auditorOf(t, cat, nil)
	o := workload(t, "example.com", "Cactus", `{}`)
	if !a.Audits(o) {
		t.Fatal("the Cactus is not audited")
	}
	rows, err := a.Check(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Rule != "no-cacti" {
		t.Fatalf("rows %v, want the no-cacti one", rows)
	}
}
