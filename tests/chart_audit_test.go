package tests

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/tenantguard/tenantguard/internal/audit"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// TestChartAuditValues: the audit is on by default with openreports.io's
// reports, whose CRDs the chart installs and whose RBAC it grants; the
// values turn it off, change its interval and format, and leave the CRDs out.
func TestChartAuditValues(t *testing.T) {
	openreports := []string{"CustomResourceDefinition/reports.openreports.io", "CustomResourceDefinition/clusterreports.openreports.io"}
	wgpolicy := []string{"CustomResourceDefinition/policyreports.wgpolicyk8s.io", "CustomResourceDefinition/clusterpolicyreports.wgpolicyk8s.io"}
	tests := []struct {
		name          string
		args          []string
		wantArgs      []string
		crds, noCRDs  []string
		reportsGroup  string
		auditReadable bool
	}{
		{"by default every 5 minutes into openreports.io's Reports", nil, []string{"--audit-interval=5m", "--audit-report-format=openreports"}, openreports, wgpolicy, "openreports.io", true},
		{"another interval", []string{"--set", "audit.interval=1h"}, []string{"--audit-interval=1h"}, openreports, wgpolicy, "openreports.io", true},
		{"wgpolicyk8s.io's PolicyReports", []string{"--set", "audit.reportFormat=wgpolicyk8s"}, []string{"--audit-report-format=wgpolicyk8s"}, wgpolicy, openreports, "wgpolicyk8s.io", true},
		{"the CRDs left to the cluster", []string{"--set", "audit.installCRD=false"}, []string{"--audit-interval=5m"}, nil, append(slices.Clone(openreports), wgpolicy...), "openreports.io", true},
		{"counting pods only: the audit still lists the claims and Services the rules judge", []string{"--set", "countedResources={pods}"}, []string{"--audit-interval=5m"}, openreports, wgpolicy, "openreports.io", true},
		{"off: interval 0, no CRD, no report RBAC", []string{"--set", "audit.enabled=false"}, []string{"--audit-interval=0"}, nil, append(slices.Clone(openreports), wgpolicy...), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs := render(t, tt.args...)
			var d appsv1.Deployment
			decode(t, docs["Deployment/tg-tenantguard"], &d)
			args := d.Spec.Template.Spec.Containers[0].Args
			for _, want := range tt.wantArgs {
				if !slices.Contains(args, want) {
					t.Errorf("args %v lack %s", args, want)
				}
			}
			for _, id := range tt.crds {
				var crd apiextensionsv1.CustomResourceDefinition
				decode(t, docs[id], &crd)
				if crd.Annotations["helm.sh/resource-policy"] != "keep" {
					t.Errorf("%s is not kept on uninstall: %v", id, crd.Annotations)
				}
			}
			for _, id := range tt.noCRDs {
				if docs[id] != "" {
					t.Errorf("%s rendered", id)
				}
			}
			var role rbacv1.ClusterRole
			decode(t, docs["ClusterRole/tg-tenantguard"], &role)
			for _, group := range []string{"openreports.io", "wgpolicyk8s.io"} {
				if granted := slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.APIGroups, group) }); granted != (group == tt.reportsGroup) {
					t.Errorf("%s reports granted: %v", group, granted)
				}
			}
			if got := readsAll(role, auditReads(t)); got != tt.auditReadable {
				t.Errorf("the ClusterRole lets the audit list all it reads: %v, want %v", got, tt.auditReadable)
			}
		})
	}
}

func TestChartRefusesAnUnknownReportFormat(t *testing.T) {
	refusal{"an unknown report format", []string{"--set", "audit.reportFormat=policyreport"}, "at '/audit/reportFormat'"}.check(t)
	refusal{"an interval that is not a duration", []string{"--set", "audit.interval=often"}, "at '/audit/interval'"}.check(t)
}

// auditReads are the resources the audit lists with the embedded rules and
// the example registry: namespaces, and what audit.Auditor.Resources says.
func auditReads(t *testing.T) []string {
	t.Helper()
	reg, err := registry.Load(filepath.Join("..", "examples", "registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(t.Context(), reg, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reads := []string{"/namespaces"}
	for _, gr := range audit.New(e, clusterview.New(reg.TenantLabel()), nil).Resources() {
		reads = append(reads, gr.Group+"/"+gr.Resource)
	}
	return reads
}

// readsAll reports whether role grants list on every group/resource.
func readsAll(role rbacv1.ClusterRole, resources []string) bool {
	for _, gr := range resources {
		group, resource, _ := strings.Cut(gr, "/")
		if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, "list")
		}) {
			return false
		}
	}
	return true
}
