package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// QuotaSource reports, at each scrape, every tenant-wide limit in force
// with what is used of it: resource is the quota key (namespaces, pods,
// count/deployments.apps).
type QuotaSource interface {
	Quotas(yield func(tenant, resource string, used, limit int64))
}

var (
	quotaUsedDesc = prometheus.NewDesc("tenantguard_tenant_quota_used",
		"Objects a tenant holds, summed over its namespaces, for each tenant-wide limit in force (namespaceQuota as resource namespaces, quotas by key); creates being decided or admitted and not seen yet included.",
		[]string{"tenant", "resource"}, nil)
	quotaLimitDesc = prometheus.NewDesc("tenantguard_tenant_quota_limit",
		"A tenant's limit in force, by resource (namespaces, pods, count/deployments.apps ...).",
		[]string{"tenant", "resource"}, nil)
)

// quotaCollector reads a QuotaSource at each scrape: the figures are the
// view's counts at that moment, never a copy kept between scrapes.
type quotaCollector struct{ source QuotaSource }

func (c quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- quotaUsedDesc
	ch <- quotaLimitDesc
}

func (c quotaCollector) Collect(ch chan<- prometheus.Metric) {
	c.source.Quotas(func(tenant, resource string, used, limit int64) {
		ch <- prometheus.MustNewConstMetric(quotaUsedDesc, prometheus.GaugeValue, float64(used), tenant, resource)
		ch <- prometheus.MustNewConstMetric(quotaLimitDesc, prometheus.GaugeValue, float64(limit), tenant, resource)
	})
}

// WatchQuotas exports the tenant-wide limits of source and their use as
// the gauges tenantguard_tenant_quota_used and _limit.
func (m *Metrics) WatchQuotas(source QuotaSource) {
	m.registry.MustRegister(quotaCollector{source})
}
