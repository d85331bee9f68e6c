package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// AuditKey is a tenant, a rule and the rule's mode (deny, warn, dryrun),
// the labels of the audit's violation gauge.
type AuditKey struct{ Tenant, Rule, Mode string }

var (
	auditViolationsDesc = prometheus.NewDesc("tenantguard_audit_violations",
		"Existing objects that violate a rule, by tenant (\"\" for a namespace of none), rule id and the rule's mode (deny, warn, dryrun), as the last background audit found them; only the leader audits.",
		[]string{"tenant", "rule", "mode"}, nil)
	auditObjectsDesc = prometheus.NewDesc("tenantguard_audit_objects",
		"Objects the last background audit checked.", nil, nil)
	auditDurationDesc = prometheus.NewDesc("tenantguard_audit_last_duration_seconds",
		"How long the last background audit took, listing, checking and writing the reports.", nil, nil)
	auditLastDesc = prometheus.NewDesc("tenantguard_audit_last_run_timestamp_seconds",
		"Unix time the last background audit ended.", nil, nil)
)

// auditRun is what one finished background audit found; never changed
// once published.
type auditRun struct {
	violations map[AuditKey]int
	objects    int
	took       time.Duration
	at         time.Time
}

// auditCollectors are the background audit's figures. The gauges come
// from the last audit's auditRun, swapped in whole: a scrape sees one
// audit's figures, never half of the next, and a replica that has audited
// nothing (not the leader, or the audit off) exports none of them rather
// than zeros a staleness alert would read as an audit at 1970.
type auditCollectors struct {
	gauges   *auditGauges
	failures prometheus.Counter
}

func newAuditCollectors() auditCollectors {
	return auditCollectors{
		gauges: &auditGauges{},
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tenantguard_audit_failures_total",
			Help: "Background audits that did not finish (a list failed, reports could not be written).",
		}),
	}
}

func (a auditCollectors) collectors() []prometheus.Collector {
	return []prometheus.Collector{a.gauges, a.failures}
}

// auditGauges exports the last audit's run.
type auditGauges struct{ last atomic.Pointer[auditRun] }

func (g *auditGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- auditViolationsDesc
	ch <- auditObjectsDesc
	ch <- auditDurationDesc
	ch <- auditLastDesc
}

func (g *auditGauges) Collect(ch chan<- prometheus.Metric) {
	run := g.last.Load()
	if run == nil {
		return
	}
	for k, n := range run.violations {
		ch <- prometheus.MustNewConstMetric(auditViolationsDesc, prometheus.GaugeValue, float64(n), k.Tenant, k.Rule, k.Mode)
	}
	ch <- prometheus.MustNewConstMetric(auditObjectsDesc, prometheus.GaugeValue, float64(run.objects))
	ch <- prometheus.MustNewConstMetric(auditDurationDesc, prometheus.GaugeValue, run.took.Seconds())
	ch <- prometheus.MustNewConstMetric(auditLastDesc, prometheus.GaugeValue, float64(run.at.Unix()))
}

// Audited records a finished background audit: the violations it found by
// tenant, rule and mode (replacing the last audit's), how many objects it
// checked, how long it took and when it ended. violations is the
// metrics' own from then on.
func (m *Metrics) Audited(violations map[AuditKey]int, objects int, took time.Duration, at time.Time) {
	m.audit.gauges.last.Store(&auditRun{violations: violations, objects: objects, took: took, at: at})
}

// AuditFailed records a background audit that did not finish.
func (m *Metrics) AuditFailed() { m.audit.failures.Inc() }
