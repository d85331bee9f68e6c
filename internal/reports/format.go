package reports

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Format is a policy report API: its group version and kinds.
type Format struct {
	// Name is how --audit-report-format names it.
	Name string
	// GroupVersion is the API's.
	GroupVersion schema.GroupVersion
	// Kind and ClusterKind are the namespaced and the cluster-scoped report.
	Kind, ClusterKind string
	// Resource and ClusterResource are their resources.
	Resource, ClusterResource string
	// source is set on the report itself where the API has the field.
	source bool
}

// The formats, by name.
var (
	// OpenReports is the openreports.io/v1alpha1 Report and ClusterReport,
	// the Policy working group's successor of wgpolicyk8s.io: the default.
	OpenReports = Format{Name: "openreports", GroupVersion: schema.GroupVersion{Group: "openreports.io", Version: "v1alpha1"}, Kind: "Report", ClusterKind: "ClusterReport", Resource: "reports", ClusterResource: "clusterreports", source: true}
	// WGPolicy is the wgpolicyk8s.io/v1alpha2 PolicyReport and
	// ClusterPolicyReport that Kyverno writes by default.
	WGPolicy = Format{Name: "wgpolicyk8s", GroupVersion: schema.GroupVersion{Group: "wgpolicyk8s.io", Version: "v1alpha2"}, Kind: "PolicyReport", ClusterKind: "ClusterPolicyReport", Resource: "policyreports", ClusterResource: "clusterpolicyreports"}
)

// Formats are the formats, the default first.
var Formats = []Format{OpenReports, WGPolicy}

// FormatNamed is the format of a --audit-report-format value.
func FormatNamed(name string) (Format, error) {
	i := slices.IndexFunc(Formats, func(f Format) bool { return f.Name == name })
	if i < 0 {
		names := make([]string, len(Formats))
		for j, f := range Formats {
			names[j] = f.Name
		}
		return Format{}, fmt.Errorf("unknown report format %q; use one of %s", name, strings.Join(names, ", "))
	}
	return Formats[i], nil
}

// GVK is the kind of the namespaced report (cluster false) or the
// cluster-scoped one.
func (f Format) GVK(cluster bool) schema.GroupVersionKind {
	if cluster {
		return f.GroupVersion.WithKind(f.ClusterKind)
	}
	return f.GroupVersion.WithKind(f.Kind)
}
