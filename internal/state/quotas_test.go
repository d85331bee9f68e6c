package state_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/metrics"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/tests/fixtures"
)

func TestQuotasReportTheViewAgainstTheRegistry(t *testing.T) {
	store, _ := newStore(t)
	var before []string
	store.Quotas(func(tenant, resource string, used, limit float64) { before = append(before, tenant) })
	if len(before) != 0 {
		t.Fatalf("limits reported before any registry: %v", before)
	}
	objects, err := clusterview.LoadFile(fixtures.ClusterFile())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objects {
		store.View().Upsert(o)
	}
	if err := store.LoadRegistry(t.Context(), "test", []byte(registryDoc(t))); err != nil {
		t.Fatal(err)
	}
	var got []string
	store.Quotas(func(tenant, resource string, used, limit float64) {
		got = append(got, fmt.Sprintf("%s %s %v/%v", tenant, resource, used, limit))
	})
	// cluster.yaml: oil holds 2 of 3 namespaces, 19 of 20 pods and 4 of 5
	// claims; gas 2 of 2 namespaces and 4 of 4 services.
	// ore sums 1000m of 1500m requested CPU, 2Gi of 4Gi of memory limits.
	for _, want := range []string{"oil namespaces 2/3", "oil pods 19/20", "oil persistentvolumeclaims 4/5", "gas namespaces 2/2", "gas services 4/4", "ore requests.cpu 1/1.5", "ore limits.memory 2.147483648e+09/4.294967296e+09"} {
		if !slices.Contains(got, want) {
			t.Errorf("no %q in %v", want, got)
		}
	}

	m := metrics.New()
	m.WatchQuotas(store)
	families, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	gauges := map[string]float64{}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range metric.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			gauges[fmt.Sprintf("%s{%s %s}", f.GetName(), labels["tenant"], labels["resource"])] = metric.GetGauge().GetValue()
		}
	}
	for name, want := range map[string]float64{
		"tenantguard_tenant_quota_used{oil pods}":          19,
		"tenantguard_tenant_quota_limit{oil pods}":         20,
		"tenantguard_tenant_quota_used{gas namespaces}":    2,
		"tenantguard_tenant_quota_limit{gas namespaces}":   2,
		"tenantguard_tenant_quota_used{ore requests.cpu}":  1,
		"tenantguard_tenant_quota_limit{ore requests.cpu}": 1.5,
	} {
		if got, ok := gauges[name]; !ok || got != want {
			t.Errorf("%s = %v (reported: %v), want %v", name, got, ok, want)
		}
	}
}

func TestLimitTextWritesCountsAsPeopleWriteThem(t *testing.T) {
	tests := []struct {
		name  string
		limit state.Limit
		n     int64
		want  string
	}{
		{"a count of a thousand is 1000, not 1k", state.Limit{Resource: "pods"}, 1000, "1000"},
		{"a count of twelve is 12", state.Limit{Resource: "count/deployments.apps"}, 12, "12"},
		{"a CPU sum is in cores or thousandths", state.Limit{Resource: "requests.cpu", Sum: true}, 1500, "1500m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.limit.Text(tt.n); got != tt.want {
				t.Errorf("Text(%d) = %q, want %q", tt.n, got, tt.want)
			}
		})
	}
}
