package clusterview

import (
	"reflect"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tenantguard/tenantguard/internal/usage"
)

// TestAResourceClaimManifestCountsItsDevicesInEveryVersion reads
// ResourceClaims as review, audit and status --objects do: one of
// resource.k8s.io/v1beta1, whose exact request is the request itself,
// counts as the same claim in v1, and the manifest read is left unchanged.
func TestAResourceClaimManifestCountsItsDevicesInEveryVersion(t *testing.T) {
	want := usage.List{{Key: "gpu.deviceclass.resource.k8s.io/devices", N: 3}, {Key: "nic.deviceclass.resource.k8s.io/devices", N: 32}}
	for version, requests := range map[string]string{
		"v1":      `[{name: a, exactly: {deviceClassName: gpu, count: 2}}, {name: b, exactly: {deviceClassName: nic, allocationMode: All}}, {name: c, firstAvailable: [{name: one, deviceClassName: gpu}]}]`,
		"v1beta1": `[{name: a, deviceClassName: gpu, count: 2}, {name: b, deviceClassName: nic, allocationMode: All}, {name: c, deviceClassName: "", firstAvailable: [{name: one, deviceClassName: gpu}]}]`,
	} {
		t.Run(version, func(t *testing.T) {
			var obj map[string]any
			text := `{apiVersion: resource.k8s.io/` + version + `, kind: ResourceClaim, metadata: {name: c, namespace: a}, spec: {devices: {requests: ` + requests + `}}}`
			if err := yaml.Unmarshal([]byte(text), &obj); err != nil {
				t.Fatal(err)
			}
			o, err := FromManifest(obj)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(o.Usage, want) {
				t.Errorf("usage %v, want %v", o.Usage, want)
			}
			var again map[string]any
			if err := yaml.Unmarshal([]byte(text), &again); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(obj, again) {
				t.Error("reading the manifest changed it")
			}
		})
	}
}
