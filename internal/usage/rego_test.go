package usage_test

import (
	"io/fs"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tenantguard/tenantguard/internal/usage"
	tgrego "github.com/tenantguard/tenantguard/rego"
)

// TestTheRegoLibraryScalesQuantitiesAsGoDoes holds the exports' usage
// library (lib/usage amount) equal to Scaled, which the server sums with,
// on quantities whose decimal value binary floating point does not hold
// (501m) and on those it rounds up.
func TestTheRegoLibraryScalesQuantitiesAsGoDoes(t *testing.T) {
	src, err := fs.ReadFile(tgrego.FS(), "tenantguard/lib/usage/usage.rego")
	if err != nil {
		t.Fatal(err)
	}
	query, err := rego.New(rego.Query("x := data.tenantguard.lib.usage.amount(input.key, input.q)"), rego.Module("usage.rego", string(src))).PrepareForEval(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ key, q string }{
		{"requests.cpu", "100m"}, {"requests.cpu", "253m"}, {"requests.cpu", "501m"}, {"requests.cpu", "506m"},
		{"requests.cpu", "509m"}, {"requests.cpu", "1002m"}, {"limits.cpu", "2003m"}, {"requests.cpu", "1.5"},
		{"requests.cpu", "0.501"}, {"requests.cpu", "0.0001"}, {"requests.cpu", "0.0010001"}, {"requests.cpu", "64"},
		{"requests.memory", "128Mi"}, {"requests.memory", "0.3G"}, {"requests.memory", "1500m"}, {"limits.memory", "1.1Gi"},
		{"requests.storage", "10Gi"}, {"requests.storage", "2.5T"}, {"requests.nvidia.com/gpu", "2"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.q, func(t *testing.T) {
			rs, err := query.Eval(t.Context(), rego.EvalInput(map[string]any{"key": tt.key, "q": tt.q}))
			if err != nil || len(rs) != 1 {
				t.Fatalf("amount: %v, %v", rs, err)
			}
			got, err := rs[0].Bindings["x"].(interface{ Int64() (int64, error) }).Int64()
			if err != nil {
				t.Fatalf("amount %v: %v", rs[0].Bindings["x"], err)
			}
			if want := usage.Scaled(tt.key, resource.MustParse(tt.q)); got != want {
				t.Errorf("Rego %d, Go %d", got, want)
			}
		})
	}
}
