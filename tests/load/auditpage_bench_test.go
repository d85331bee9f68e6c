package load

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tenantguard/tenantguard/internal/auditloop"
	"github.com/tenantguard/tenantguard/internal/jsonast"
)

// BenchmarkDecodeAPageOfPods decodes a page of 100 of the audit cluster's
// pods, as the API server stores them (managed fields, status), the way the
// background audit does (auditloop.DecodePage) and, for reference, the way
// controller-runtime's API reader decodes a list into unstructured objects,
// which the audit did before: per op, 100 pods.
func BenchmarkDecodeAPageOfPods(b *testing.B) {
	c := &auditCluster{scale: Scale{Tenants: 10, Namespaces: 10, Pods: 100}}
	page := c.page("v1", "PodList", 100, 0, 100, "100")
	b.Run("jsonast", func(b *testing.B) {
		cache := jsonast.NewCache(2048)
		b.ReportAllocs()
		for b.Loop() {
			items, _, err := auditloop.DecodePage(cache, page)
			if err != nil || len(items) != 100 {
				b.Fatalf("%d items, %v", len(items), err)
			}
		}
	})
	b.Run("unstructured", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			list := &unstructured.UnstructuredList{}
			if err := runtime.DecodeInto(unstructured.UnstructuredJSONScheme, page, list); err != nil || len(list.Items) != 100 {
				b.Fatalf("%d items, %v", len(list.Items), err)
			}
		}
	})
}
