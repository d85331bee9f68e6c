package generator_test

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tenantguard/tenantguard/generator"
	"github.com/tenantguard/tenantguard/internal/registry"
)

func TestInstanceNames(t *testing.T) {
	for _, tc := range []struct {
		name     string
		instance string
		want     []string // quota, limits, isolation, creator, deleter, owners
		refused  bool
	}{
		{"No name is the default instance, with the names of earlier versions", "", []string{generator.ResourceQuotaName, generator.LimitRangeName, generator.NetworkPolicyName, generator.NamespaceCreatorRole, generator.NamespaceDeleterRole, generator.OwnersBinding}, false},
		{"The default's own name is the default instance", generator.DefaultInstance, []string{"tenantguard-quota", "tenantguard-limits", "tenantguard-isolation", "tenantguard-namespace-creator", "tenantguard-namespace-deleter", "tenantguard-owners"}, false},
		{"Another instance prefixes every name with its own", "blue-tenantguard", []string{"blue-tenantguard-quota", "blue-tenantguard-limits", "blue-tenantguard-isolation", "blue-tenantguard-namespace-creator", "blue-tenantguard-namespace-deleter", "blue-tenantguard-owners"}, false},
		{"A name with capitals is refused", "Blue", nil, true},
		{"A name longer than a label value is refused", "a123456789012345678901234567890123456789012345678901234567890123", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, err := generator.NewInstance(tc.instance)
			if tc.refused {
				if err == nil {
					t.Fatalf("NewInstance(%q) accepted", tc.instance)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []string{i.ResourceQuotaName(), i.LimitRangeName(), i.NetworkPolicyName(), i.NamespaceCreatorRole(), i.NamespaceDeleterRole(), i.OwnersBinding()}
			for n := range got {
				if got[n] != tc.want[n] {
					t.Errorf("name %d is %q, want %q", n, got[n], tc.want[n])
				}
			}
		})
	}
}

// TestTwoInstancesShareNothing generates the example registry's objects for
// the default instance and another: no object has the same kind, namespace
// and name in both, and each instance's selector finds its own objects and
// none of the other's, which is what keeps one from pruning the other's.
func TestTwoInstancesShareNothing(t *testing.T) {
	snap, err := registry.Load(filepath.Join("testdata", "options.registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ns := namespaces(t, filepath.Join("testdata", "options.namespaces.yaml"))
	blue, err := generator.NewInstance("blue")
	if err != nil {
		t.Fatal(err)
	}
	key := func(o client.Object) string {
		return o.GetObjectKind().GroupVersionKind().Kind + "/" + o.GetNamespace() + "/" + o.GetName()
	}
	objects := map[string][]client.Object{}
	for _, i := range []generator.Instance{generator.Default, blue} {
		objects[i.Name()] = i.Generate(snap, ns)
	}
	seen := map[string]bool{}
	for _, o := range objects[generator.DefaultInstance] {
		seen[key(o)] = true
	}
	for _, o := range objects["blue"] {
		if seen[key(o)] {
			t.Errorf("both instances write %s", key(o))
		}
		if o.GetLabels()[generator.InstanceLabel] != "blue" {
			t.Errorf("%s has %s=%q", key(o), generator.InstanceLabel, o.GetLabels()[generator.InstanceLabel])
		}
	}
	for _, i := range []generator.Instance{generator.Default, blue} {
		for owner, objs := range objects {
			for _, o := range objs {
				if got, want := i.Selector().Matches(labels.Set(o.GetLabels())), owner == i.Name(); got != want {
					t.Errorf("instance %s's selector %s matches %s of %s: %v", i.Name(), i.Selector(), key(o), owner, got)
				}
			}
		}
	}
}
