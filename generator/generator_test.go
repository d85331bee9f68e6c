package generator_test

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tenantguard/tenantguard/generator"
	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// Set UPDATE_GOLDEN=1 to rewrite testdata/*.golden.yaml from the generator.
var update = os.Getenv("UPDATE_GOLDEN") != ""

func namespaces(t testing.TB, file string) []generator.Namespace {
	t.Helper()
	objects, err := clusterview.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []generator.Namespace
	for _, o := range objects {
		if o.Kind == "Namespace" {
			out = append(out, generator.Namespace{Name: o.Name, Labels: o.Labels})
		}
	}
	return out
}

func TestGolden(t *testing.T) {
	for _, name := range []string{"example", "options"} {
		t.Run(name, func(t *testing.T) {
			snap, err := registry.Load(filepath.Join("testdata", name+".registry.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := generator.YAML(generator.Generate(snap, namespaces(t, filepath.Join("testdata", name+".namespaces.yaml"))))
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".golden.yaml")
			if update {
				if err := os.WriteFile(golden, got, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s (UPDATE_GOLDEN=1 rewrites it):\n%s", golden, got)
			}
		})
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	snap, err := registry.Load(filepath.Join("testdata", "options.registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ns := namespaces(t, filepath.Join("testdata", "options.namespaces.yaml"))
	first, err := generator.YAML(generator.Generate(snap, ns))
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		reversed := make([]generator.Namespace, len(ns))
		for i, n := range ns {
			reversed[len(ns)-1-i] = n
		}
		ns = reversed
		again, err := generator.YAML(generator.Generate(snap, ns))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Fatal("the output depends on the order of the namespaces or on map order")
		}
	}
}

func TestEveryCompanionCarriesTheLabels(t *testing.T) {
	snap, err := registry.Load(filepath.Join("testdata", "example.registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs := generator.Generate(snap, namespaces(t, filepath.Join("testdata", "example.namespaces.yaml")))
	for _, o := range objs {
		if o.GetLabels()[generator.ManagedByLabel] != generator.ManagedByValue {
			t.Errorf("%T %s has no managed-by label", o, o.GetName())
		}
		if o.GetNamespace() != "" && !strings.HasPrefix(o.GetNamespace(), o.GetLabels()[snap.TenantLabel()]+"-") {
			t.Errorf("%T %s/%s has tenant label %q", o, o.GetNamespace(), o.GetName(), o.GetLabels()[snap.TenantLabel()])
		}
		if o.GetNamespace() == "kube-system" || o.GetNamespace() == "stray" {
			t.Errorf("companion %s in %s, which is no tenant's", o.GetName(), o.GetNamespace())
		}
	}
}

// TestTheManagedRuleJudgesEveryCompanionKind holds the kinds the
// managed-resource rule declares (its METADATA) equal to the kinds of the
// companions the generator makes in tenant namespaces, so that no
// companion can be changed unseen.
func TestTheManagedRuleJudgesEveryCompanionKind(t *testing.T) {
	snap, err := registry.Load(filepath.Join("testdata", "options.registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	made := map[string]bool{}
	for _, obj := range generator.Generate(snap, namespaces(t, filepath.Join("testdata", "options.namespaces.yaml"))) {
		gvk := obj.GetObjectKind().GroupVersionKind()
		if obj.GetNamespace() == "" {
			continue // cluster-wide RBAC: no tenant writes it
		}
		key := gvk.Kind
		if gvk.Group != "" {
			key = gvk.Group + "/" + gvk.Kind
		}
		made[key] = true
	}
	rule, ok := catalog.MustEmbedded().Rule("managed-resource")
	if !ok {
		t.Fatal("no managed-resource rule")
	}
	judged := map[string]bool{}
	for _, key := range rule.KindKeys() {
		judged[key] = true
	}
	if !maps.Equal(made, judged) {
		t.Errorf("the generator makes %v, managed-resource judges %v", slices.Sorted(maps.Keys(made)), slices.Sorted(maps.Keys(judged)))
	}
}
