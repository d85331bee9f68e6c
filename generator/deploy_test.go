package generator_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tenantguard/tenantguard/generator"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// TestDeployShipsTheGeneratedClusterRoles keeps deploy/rbac's copies of the
// two namespace ClusterRoles identical to what the generator prints.
func TestDeployShipsTheGeneratedClusterRoles(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "rbac", "tenantguard.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	shipped := map[string]map[string]any{}
	for doc := range strings.SplitSeq(string(raw), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		if md, ok := m["metadata"].(map[string]any); ok && m["kind"] == "ClusterRole" {
			shipped[md["name"].(string)] = m
		}
	}
	snap, err := registry.Load(filepath.Join("testdata", "example.registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range generator.Cluster(snap) {
		if obj.GetObjectKind().GroupVersionKind().Kind != "ClusterRole" {
			continue
		}
		u, err := generator.Unstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]any
		raw, _ := json.Marshal(u.Object)
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if got := shipped[obj.GetName()]; !reflect.DeepEqual(got, want) {
			t.Errorf("deploy/rbac's %s differs from the generator's:\n got %v\nwant %v", obj.GetName(), got, want)
		}
	}
}
