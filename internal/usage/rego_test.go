package usage_test

import (
	"io/fs"
	"maps"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/tenantguard/tenantguard/internal/usage"
	tgrego "github.com/tenantguard/tenantguard/rego"
)

// libraryQuery prepares query, binding x, over the rule library's usage
// package.
func libraryQuery(t *testing.T, query string) rego.PreparedEvalQuery {
	t.Helper()
	src, err := fs.ReadFile(tgrego.FS(), "tenantguard/lib/usage/usage.rego")
	if err != nil {
		t.Fatal(err)
	}
	prepared, err := rego.New(rego.Query(query), rego.Module("usage.rego", string(src))).PrepareForEval(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return prepared
}

// TestTheRegoLibraryScalesQuantitiesAsGoDoes holds the exports' usage
// library (lib/usage amount) equal to Scaled, which the server sums with,
// on quantities whose decimal value binary floating point does not hold
// (501m) and on those it rounds up.
func TestTheRegoLibraryScalesQuantitiesAsGoDoes(t *testing.T) {
	query := libraryQuery(t, "x := data.tenantguard.lib.usage.amount(input.key, input.q)")
	tests := []struct{ key, q string }{
		{"requests.cpu", "100m"}, {"requests.cpu", "253m"}, {"requests.cpu", "501m"}, {"requests.cpu", "506m"},
		{"requests.cpu", "509m"}, {"requests.cpu", "1002m"}, {"limits.cpu", "2003m"}, {"requests.cpu", "1.5"},
		{"requests.cpu", "0.501"}, {"requests.cpu", "0.0001"}, {"requests.cpu", "0.0010001"}, {"requests.cpu", "64"},
		{"requests.cpu", "100u"}, {"requests.cpu", "1500n"}, {"requests.cpu", "2500000n"}, {"requests.memory", "1500000000n"},
		{"requests.memory", "128Mi"}, {"requests.memory", "0.3G"}, {"requests.memory", "1500m"}, {"limits.memory", "1.1Gi"},
		{"requests.storage", "10Gi"}, {"requests.storage", "2.5T"}, {"requests.nvidia.com/gpu", "2"},
		{"cpu", "250m"}, {"requests.example.com/vcpu", "9"},
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

// TestTheRegoLibrarySumsPodsAsGoDoes holds the exports' pod usage (lib/usage
// pod) equal to Pod, Kubernetes' own helpers, on pods whose shapes the two
// once read differently.
func TestTheRegoLibrarySumsPodsAsGoDoes(t *testing.T) {
	query := libraryQuery(t, "x := data.tenantguard.lib.usage.pod(input)")
	tests := []struct{ name, spec, status string }{
		{"containers and a native sidecar", `{containers: [{name: a, resources: {requests: {cpu: 501m, memory: 1Gi}, limits: {cpu: "1"}}}], initContainers: [{name: s, restartPolicy: Always, resources: {requests: {cpu: 253m}}}, {name: i, resources: {requests: {cpu: "2"}}}]}`, ""},
		{"hugepages at pod level replace the containers'", `{resources: {requests: {hugepages-2Mi: 1Gi, memory: 1Gi}, limits: {hugepages-2Mi: 1Gi, memory: 1Gi}}, containers: [{name: a}]}`, ""},
		{"overhead of a resource no container names", `{overhead: {cpu: 250m, memory: 64Mi}, containers: [{name: a, resources: {requests: {memory: 1Gi}, limits: {memory: 1Gi}}}]}`, ""},
		{"cpu and memory at pod level with an extended resource per container", `{resources: {requests: {cpu: "2", memory: 2Gi}}, containers: [{name: a, resources: {requests: {cpu: 100m, nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}]}`, ""},
		{"a resize in flight: the sums of spec and status, not each container's larger",
			`{containers: [{name: a, resources: {requests: {cpu: "1"}, limits: {cpu: "4"}}}, {name: b, resources: {requests: {cpu: "3"}, limits: {cpu: "3"}}}]}`,
			`{phase: Running, containerStatuses: [{name: a, allocatedResources: {cpu: "2"}, resources: {requests: {cpu: "2"}, limits: {cpu: "2"}}}, {name: b, allocatedResources: {cpu: "2"}, resources: {requests: {cpu: "2"}, limits: {cpu: "5"}}}]}`},
		{"a resize found infeasible: the status alone",
			`{containers: [{name: a, resources: {requests: {cpu: "8", memory: 1Gi}, limits: {memory: 1Gi}}}, {name: b, resources: {requests: {cpu: "1"}}}]}`,
			`{phase: Running, conditions: [{type: PodResizePending, status: "True", reason: Infeasible}], containerStatuses: [{name: a, allocatedResources: {cpu: "1", memory: 1Gi}, resources: {requests: {cpu: "1"}}}]}`},
		{"a resize deferred: the spec still counts",
			`{containers: [{name: a, resources: {requests: {cpu: "8"}}}]}`,
			`{phase: Running, conditions: [{type: PodResizePending, status: "True", reason: Deferred}], containerStatuses: [{name: a, allocatedResources: {cpu: "1"}}]}`},
		{"actuated requests larger than allocated, on an init container too",
			`{initContainers: [{name: i, resources: {requests: {memory: 1Gi}}}], containers: [{name: a, resources: {requests: {memory: 256Mi}}}]}`,
			`{phase: Running, initContainerStatuses: [{name: i, allocatedResources: {memory: 1Gi}}], containerStatuses: [{name: a, allocatedResources: {memory: 256Mi}, resources: {requests: {memory: 2Gi}}}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := ""
			if tt.status != "" {
				status = ", status: " + tt.status
			}
			sameUsage(t, query, `{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: a}, spec: `+tt.spec+status+`}`, usage.Pod)
		})
	}
}

// TestTheRegoLibraryCountsDevicesAsGoDoes holds the exports' ResourceClaim
// usage (lib/usage device_claim) equal to DeviceClaim.
func TestTheRegoLibraryCountsDevicesAsGoDoes(t *testing.T) {
	query := libraryQuery(t, "x := data.tenantguard.lib.usage.device_claim(input)")
	tests := map[string]string{
		"exact counts, given and not":       `[{name: a, exactly: {deviceClassName: gpu, allocationMode: ExactCount, count: 3}}, {name: b, exactly: {deviceClassName: gpu}}]`,
		"all the devices of a pool":         `[{name: a, exactly: {deviceClassName: nic, allocationMode: All}}]`,
		"alternatives of two classes":       `[{name: a, firstAvailable: [{name: big, deviceClassName: gpu, count: 2}, {name: small, deviceClassName: gpu, count: 5}, {name: alt, deviceClassName: fpga}]}, {name: b, exactly: {deviceClassName: gpu, count: 1}}]`,
		"no requests":                       `[]`,
		"a mode this version does not know": `[{name: a, exactly: {deviceClassName: tpu, allocationMode: Later, count: 2}}, {name: b, exactly: {deviceClassName: gpu}}]`,
		"a mode given empty":                `[{name: a, exactly: {deviceClassName: gpu, allocationMode: "", count: 2}}]`,
		"alternatives for all and a count":  `[{name: a, firstAvailable: [{name: big, deviceClassName: gpu, allocationMode: All}, {name: small, deviceClassName: gpu, count: 40}]}]`,
	}
	for name, requests := range tests {
		t.Run(name, func(t *testing.T) {
			sameUsage(t, query, `{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: c, namespace: a}, spec: {devices: {requests: `+requests+`}}}`, usage.DeviceClaim)
		})
	}
}

// sameUsage holds query's x, the Rego library's usage of the object of
// manifest (YAML), equal to goUsage's of the object decoded as T.
func sameUsage[T any](t *testing.T, query rego.PreparedEvalQuery, manifest string, goUsage func(*T) corev1.ResourceList) {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &doc); err != nil {
		t.Fatal(err)
	}
	var obj T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(doc, &obj); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, a := range usage.Of(goUsage(&obj)) {
		want[a.Key] = a.N
	}
	rs, err := query.Eval(t.Context(), rego.EvalInput(doc))
	if err != nil || len(rs) != 1 {
		t.Fatalf("Rego: %v, %v", rs, err)
	}
	got := map[string]int64{}
	for k, v := range rs[0].Bindings["x"].(map[string]any) {
		n, err := v.(interface{ Int64() (int64, error) }).Int64()
		if err != nil {
			t.Fatalf("%s: %v: %v", k, v, err)
		}
		got[k] = n
	}
	if !maps.Equal(got, want) {
		t.Errorf("Rego %v\nGo   %v", got, want)
	}
}
