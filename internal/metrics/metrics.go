package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Decisions a request can end with, the values of the decision label.
const (
	DecisionAllowed    = "allowed"
	DecisionDenied     = "denied"
	DecisionError      = "error"
	DecisionBadRequest = "bad_request"
	// DecisionUnauthenticated is a caller refused before any decision (no
	// client certificate with --client-ca-file).
	DecisionUnauthenticated = "unauthenticated"
)

// Sources of reloads, the values of the source label.
const (
	SourceRegistry = "registry"
	SourcePolicy   = "policy"
	SourceTLS      = "tls"
)

// latencyBuckets run from 50µs to 5s: decisions take well under a
// millisecond, and the API server gives up after its webhook timeout.
var latencyBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
}

// Metrics are one server's collectors.
type Metrics struct {
	registry        *prometheus.Registry
	requests        *prometheus.CounterVec
	violations      *prometheus.CounterVec
	duration        *prometheus.HistogramVec
	generation      *prometheus.GaugeVec
	reloads         *prometheus.CounterVec
	lastReloadError *prometheus.GaugeVec
	lastReloadTime  *prometheus.GaugeVec
	unrouted        prometheus.Gauge
	unselected      prometheus.Gauge
	audit           auditCollectors
}

// New registers tenantguard's collectors, and the Go and process ones, in a
// new registry.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenantguard_admission_requests_total",
			Help: "Admission requests by webhook (validate, mutate) and decision (allowed, denied, error, bad_request, unauthenticated).",
		}, []string{"webhook", "decision"}),
		violations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenantguard_rule_violations_total",
			Help: "Broken rules by rule id, enforcement mode (deny, warn, dryrun) and tenant (\"\" outside the registry's tenants); internal errors count as rule \"internal\".",
		}, []string{"rule", "mode", "tenant"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tenantguard_admission_duration_seconds",
			Help:    "Time from reading an AdmissionReview to writing the answer, by webhook.",
			Buckets: latencyBuckets,
		}, []string{"webhook"}),
		generation: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tenantguard_generation",
			Help: "How many times the source (registry, policy) has been loaded successfully; it goes up by one per accepted change.",
		}, []string{"source"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenantguard_reloads_total",
			Help: "Reload attempts by source (registry, policy, tls) and result (success, failure).",
		}, []string{"source", "result"}),
		lastReloadError: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tenantguard_reload_last_failed",
			Help: "1 while the newest version of the source was refused and an older one is in force, else 0.",
		}, []string{"source"}),
		lastReloadTime: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tenantguard_reload_last_failure_timestamp_seconds",
			Help: "Unix time of the last refused reload of the source.",
		}, []string{"source"}),
		unrouted: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tenantguard_webhook_unrouted_requests",
			Help: "Requests (configuration, resource, operation) the rules in force judge that no webhook of the installed configurations sends but the catch-all and break-glass ones, which fail open, at the last check (only with --webhook-configuration); -1 when they could not be read; alert when not 0.",
		}),
		unselected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tenantguard_webhook_unselected_namespaces",
			Help: "Tenant namespaces that the namespaceSelector of some webhook judging tenants' requests leaves out, so that their requests are not judged, at the last check (only with --webhook-configuration); -1 when the configurations could not be read; alert when above 0.",
		}),
		audit: newAuditCollectors(),
	}
	m.registry.MustRegister(m.requests, m.violations, m.duration, m.generation, m.reloads, m.lastReloadError, m.lastReloadTime, m.unrouted, m.unselected,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registry.MustRegister(m.audit.collectors()...)
	return m
}

// Unrouted records how many requests the rules in force judge the webhook
// configurations do not send (configuration.RouteCheck).
func (m *Metrics) Unrouted(n int) { m.unrouted.Set(float64(n)) }

// Unselected records how many tenant namespaces a webhook judging tenants'
// requests does not select (configuration.RouteCheck).
func (m *Metrics) Unselected(n int) { m.unselected.Set(float64(n)) }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// Gatherer is the registry, for tests that read values.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.registry }

// Request records one answered request.
func (m *Metrics) Request(webhook, decision string, took time.Duration) {
	m.requests.WithLabelValues(webhook, decision).Inc()
	m.duration.WithLabelValues(webhook).Observe(took.Seconds())
}

// Unauthenticated records a caller refused before any decision; it is
// left out of the latency histogram.
func (m *Metrics) Unauthenticated(webhook string) {
	m.requests.WithLabelValues(webhook, DecisionUnauthenticated).Inc()
}

// Violation records one broken rule; tenant is "" outside the registry's
// tenants.
func (m *Metrics) Violation(rule, mode, tenant string) {
	m.violations.WithLabelValues(rule, mode, tenant).Inc()
}

// Loaded records an accepted version of a source and its generation.
func (m *Metrics) Loaded(source string, generation int64) {
	m.reloads.WithLabelValues(source, "success").Inc()
	m.generation.WithLabelValues(source).Set(float64(generation))
	m.lastReloadError.WithLabelValues(source).Set(0)
}

// Recovered records that a source works again without a new version: a
// periodic check that passed after one that failed, or the version in force
// offered again after a refused one (a broken edit reverted).
func (m *Metrics) Recovered(source string) {
	m.lastReloadError.WithLabelValues(source).Set(0)
}

// Rejected records a refused version of a source.
func (m *Metrics) Rejected(source string, at time.Time) {
	m.reloads.WithLabelValues(source, "failure").Inc()
	m.lastReloadError.WithLabelValues(source).Set(1)
	m.lastReloadTime.WithLabelValues(source).Set(float64(at.Unix()))
}
