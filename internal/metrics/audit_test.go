package metrics

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestAnAuditReplacesTheViolationsOfTheLastOne(t *testing.T) {
	m := New()
	at := time.Unix(1700000000, 0)
	m.Audited(map[AuditKey]int{{Tenant: "oil", Rule: "host-path", Mode: "deny"}: 2, {Tenant: "gas", Rule: "service-type", Mode: "dryrun"}: 1}, 40, 3*time.Second, at)
	m.Audited(map[AuditKey]int{{Tenant: "gas", Rule: "service-type", Mode: "dryrun"}: 1}, 41, 2*time.Second, at.Add(time.Minute))
	families, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			name := f.GetName()
			for _, l := range metric.GetLabel() {
				name += "," + l.GetName() + "=" + l.GetValue()
			}
			if metric.GetGauge() != nil {
				got[name] = metric.GetGauge().GetValue()
			}
		}
	}
	want := map[string]float64{
		"tenantguard_audit_violations,mode=dryrun,rule=service-type,tenant=gas": 1,
		"tenantguard_audit_objects":                    41,
		"tenantguard_audit_last_duration_seconds":      2,
		"tenantguard_audit_last_run_timestamp_seconds": float64(at.Add(time.Minute).Unix()),
	}
	audit := map[string]float64{}
	for k, v := range got {
		if strings.HasPrefix(k, "tenantguard_audit") {
			audit[k] = v
		}
	}
	if !maps.Equal(audit, want) {
		t.Errorf("audit gauges %v, want %v", audit, want)
	}
}

func TestAReplicaThatHasNotAuditedExportsNoAuditGauges(t *testing.T) {
	m := New()
	m.AuditFailed()
	families, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "tenantguard_audit") {
			names = append(names, f.GetName())
		}
	}
	if !slices.Equal(names, []string{"tenantguard_audit_failures_total"}) {
		t.Errorf("audit families %v before any audit, want only the failures counter (a last run at 0 would read as an audit in 1970)", names)
	}
}
