package request

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
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
		{"a namespace's create names no namespace", Spec{GVK: namespace, Name: "oil-dev", Operation: Create, User: "alice", Object: []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"oil-dev"}}`)}, "", true, false},
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
