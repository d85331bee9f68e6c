package e2e

import (
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tenantguard/tenantguard/tests/live"
)

// TestChartInstallsTheReportCRDOnlyWhenItIsNotAnothers renders the chart
// as `helm install` does against a real API server (helm template
// --dry-run=server, so that the chart's lookup sees the cluster): the
// report CRD is in the release's manifest when the cluster lacks it or when
// this release (its name and namespace) installed it, and left out when
// another writer, or a release of the same name in another namespace, did.
func TestChartInstallsTheReportCRDOnlyWhenItIsNotAnothers(t *testing.T) {
	ctx := t.Context()
	cp, err := live.StartControlPlane(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(live.ReportCRDsDir(), "openreports.io_reports.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(text, &crd); err != nil {
		t.Fatal(err)
	}
	// rendered says whether the release's manifest holds the CRD.
	rendered := func(t *testing.T) bool {
		_, ok := renderedDoc(helmTemplate(t, "--dry-run=server", "--kubeconfig", kubeconfig), "CustomResourceDefinition", "reports.openreports.io")
		return ok
	}
	force := true
	// byHelm is the metadata Helm gives what a release installs.
	byHelm := func(name, namespace string) map[string]any {
		return map[string]any{
			"labels":      map[string]any{"app.kubernetes.io/managed-by": "Helm"},
			"annotations": map[string]any{"meta.helm.sh/release-name": name, "meta.helm.sh/release-namespace": namespace},
		}
	}
	// Before any CRD is applied: the cases below each apply the whole of
	// their owner's labels and annotations, so they hold in any order.
	t.Run("the cluster has no report CRD", func(t *testing.T) {
		if !rendered(t) {
			t.Error("the CRD is not rendered, want it")
		}
	})
	for _, c := range []struct {
		name  string
		owner map[string]any // the live CRD's labels and annotations
		want  bool
	}{
		{"Kyverno's Helm release installed it", byHelm("kyverno", "kyverno"), false},
		{"a release of the same name in another namespace installed it", byHelm(release, "tenantguard-staging"), false},
		{"something without Helm installed it", map[string]any{"labels": map[string]any{}, "annotations": map[string]any{}}, false},
		{"something copied this release's annotations but not Helm's label", map[string]any{"labels": map[string]any{}, "annotations": byHelm(release, releaseNamespace)["annotations"]}, false},
		{"this release installed it", byHelm(release, releaseNamespace), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			meta := crd["metadata"].(map[string]any)
			meta["labels"], meta["annotations"] = c.owner["labels"], c.owner["annotations"]
			if _, err := cp.ApplyObjects(ctx, []map[string]any{crd}, metav1.PatchOptions{FieldManager: "e2e", Force: &force}); err != nil {
				t.Fatal(err)
			}
			if got := rendered(t); got != c.want {
				t.Errorf("the CRD rendered: %v, want %v", got, c.want)
			}
		})
	}
}
