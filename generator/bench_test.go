package generator_test

import (
	"testing"

	"github.com/tenantguard/tenantguard/generator"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/scale"
)

// BenchmarkGenerate computes the companions of 10,000 namespaces of 1,000
// tenants (ResourceQuota, LimitRange, NetworkPolicy, two RoleBindings each).
func BenchmarkGenerate(b *testing.B) {
	snap, err := registry.Parse("scale", scale.Registry(1000))
	if err != nil {
		b.Fatal(err)
	}
	var namespaces []generator.Namespace
	for _, ns := range scale.Namespaces(1000, 10) {
		namespaces = append(namespaces, generator.Namespace{Name: ns.Name, Labels: map[string]string{registry.DefaultTenantLabel: ns.Tenant}})
	}
	b.ReportAllocs()
	for b.Loop() {
		if objs := generator.Generate(snap, namespaces); len(objs) != 3+5*len(namespaces) {
			b.Fatalf("%d objects", len(objs))
		}
	}
}
