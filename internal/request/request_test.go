package request

import (
	"reflect"
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/webhook/admission"
)

func TestTheRequestIsTheOneTheAPIServerSends(t *testing.T) {
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	namespace := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	tests := []struct {
		name          string
		spec          Spec
		wantNamespace string
		wantObject    bool
		wantOld       bool
	}{
		{"a create carries the object in its namespace", Spec{GVK: pod, Name: "web", Namespace: "oil-dev", Operation: Create, User: "alice", Object: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"oil-dev"}}`)}, "oil-dev", true, false},
		{"a delete carries the object as the old one", Spec{GVK: pod, Name: "web", Namespace: "oil-dev", Operation: Delete, User: "alice", Object: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"oil-dev"}}`)}, "oil-dev", false, true},
		{"a namespace's create names it as its namespace, as the API server's create handler does", Spec{GVK: namespace, Name: "oil-dev", Operation: Create, User: "alice", Object: []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"oil-dev"}}`)}, "oil-dev", true, false},
		{"a namespace's update names it as its namespace", Spec{GVK: namespace, Name: "oil-dev", Operation: Update, User: "alice", Object: []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"oil-dev"}}`), Old: []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"oil-dev"}}`)}, "oil-dev", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := Decode(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if req.Namespace != tt.wantNamespace || string(req.Operation) != tt.spec.Operation || req.Resource.Resource != map[string]string{"Pod": "pods", "Namespace": "namespaces"}[tt.spec.GVK.Kind] {
				t.Errorf("request %s %s in %q, want %s in %q", req.Operation, req.Resource.Resource, req.Namespace, tt.spec.Operation, tt.wantNamespace)
			}
			if (req.Object != nil) != tt.wantObject || (req.OldObject != nil) != tt.wantOld {
				t.Errorf("object %v, old object %v; want %v, %v", req.Object != nil, req.OldObject != nil, tt.wantObject, tt.wantOld)
			}
		})
	}
}

func TestAServiceAccountGetsItsGroups(t *testing.T) {
	got := Groups("system:serviceaccount:oil-ci:deployer", []string{"ci"})
	want := []string{"ci", "system:serviceaccounts", "system:serviceaccounts:oil-ci", "system:authenticated"}
	if !slices.Equal(got, want) {
		t.Errorf("groups %v, want %v", got, want)
	}
	if got := Groups("alice", nil); !slices.Equal(got, []string{"system:authenticated"}) {
		t.Errorf("groups %v, want only system:authenticated", got)
	}
}

func TestClusterScopedKindsLiveInNoNamespace(t *testing.T) {
	for gk, want := range map[schema.GroupKind]bool{
		{Kind: "Namespace"}: true, {Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}: true,
		{Kind: "Pod"}: false, {Group: "apps", Kind: "Deployment"}: false,
	} {
		if ClusterScoped(gk) != want {
			t.Errorf("%s cluster-scoped %v, want %v", gk, !want, want)
		}
	}
}

func TestACreateOfADecodedObjectIsTheCreateOfItsText(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
	}{
		{"a pod of a user", Spec{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Name: "web", Namespace: "oil-dev", Operation: Create, User: "alice",
			Object: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"oil-dev","labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27"}],"nodeSelector":null}}`)}},
		{"another pod of another user, in another namespace", Spec{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Name: "api", Namespace: "gas-prod", Operation: Create, User: "bob", Groups: Groups("bob", []string{"gas-team"}),
			Object: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"api","namespace":"gas-prod"},"spec":{"containers":[{"name":"api","image":"api:2"}]}}`)}},
		{"a namespace of a group member", Spec{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Name: "oil-dev", Operation: Create, User: "tenantguard:audit", Groups: Groups("tenantguard:audit", []string{"oil-team"}),
			Object: []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"oil-dev"}}`)}},
		{"a Deployment of a service account", Spec{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Name: "web", Namespace: "oil-dev", Operation: Create, User: "system:serviceaccount:ci:deployer", Groups: Groups("system:serviceaccount:ci:deployer", nil),
			Object: []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"oil-dev"},"spec":{"replicas":3}}`)}},
	}
	// One Creates for all, twice over: the second request of a kind is
	// made from the first's decoded review, and must be its own still.
	var creates Creates
	for _, tt := range append(tests, tests...) {
		t.Run(tt.name, func(t *testing.T) {
			want, err := Decode(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			obj, err := admission.ParseObject(tt.spec.Object)
			if err != nil {
				t.Fatal(err)
			}
			got, err := creates.Decode(Spec{GVK: tt.spec.GVK, Name: tt.spec.Name, Namespace: tt.spec.Namespace, Operation: Create, User: tt.spec.User, Groups: tt.spec.Groups}, obj)
			if err != nil {
				t.Fatal(err)
			}
			// Every request has a uid of its own.
			uid := ast.InternedTerm("uid")
			got.Value.Insert(uid, want.Value.Get(uid))
			got.UID = want.UID
			if got.Value.Compare(want.Value) != 0 {
				t.Errorf("input.request %v, want %v", got.Value, want.Value)
			}
			if got.Object.Compare(want.Object) != 0 {
				t.Errorf("object %v, want %v", got.Object, want.Object)
			}
			want.AdmissionRequest.Object.Raw = nil // left empty: see DecodeCreate
			if !reflect.DeepEqual(got.AdmissionRequest, want.AdmissionRequest) {
				t.Errorf("request %+v, want %+v", got.AdmissionRequest, want.AdmissionRequest)
			}
		})
	}
	if _, err := creates.Decode(Spec{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Name: "web", Operation: Update}, ast.NewObject()); err == nil {
		t.Error("an UPDATE was built as a create")
	}
}
