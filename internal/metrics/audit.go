package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// AuditKey is a tenant, a rule and the rule's mode (deny, warn, dryrun),
// the labels of the audit's violation gauge.
type AuditKey struct{ Tenant, Rule, Mode string }

// auditCollectors are the background audit's gauges (serve's leader).
type auditCollectors struct {
	violations *prometheus.GaugeVec
	objects    prometheus.Gauge
	duration   prometheus.Gauge
	last       prometheus.Gauge
	failures   prometheus.Counter
}

func newAuditCollectors() auditCollectors {
	return auditCollectors{
		violations: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tenantguard_audit_violations",
			Help: "Existing objects that violate a rule, by tenant (\"\" for a namespace of none), rule id and the rule's mode (deny, warn, dryrun), as the last background audit found them; only the leader audits.",
		}, []string{"tenant", "rule", "mode"}),
		objects: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tenantguard_audit_objects",
			Help: "Objects the last background audit checked.",
		}),
		duration: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tenantguard_audit_last_duration_seconds",
			Help: "How long the last background audit took, listing, checking and writing the reports.",
		}),
		last: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tenantguard_audit_last_run_timestamp_seconds",
			Help: "Unix time the last background audit ended.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tenantguard_audit_failures_total",
			Help: "Background audits that did not finish (a list failed, reports could not be written).",
		}),
	}
}

func (a auditCollectors) collectors() []prometheus.Collector {
	return []prometheus.Collector{a.violations, a.objects, a.duration, a.last, a.failures}
}

// Audited records a finished background audit: the violations it found by
// tenant, rule and mode (replacing the last audit's), how many objects it
// checked, how long it took and when it ended.
func (m *Metrics) Audited(violations map[AuditKey]int, objects int, took time.Duration, at time.Time) {
	m.audit.violations.Reset()
	for k, n := range violations {
		m.audit.violations.WithLabelValues(k.Tenant, k.Rule, k.Mode).Set(float64(n))
	}
	m.audit.objects.Set(float64(objects))
	m.audit.duration.Set(took.Seconds())
	m.audit.last.Set(float64(at.Unix()))
}

// AuditFailed records a background audit that did not finish.
func (m *Metrics) AuditFailed() { m.audit.failures.Inc() }
