package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// QuotaSource reports, at each scrape, every tenant-wide limit in force
// with what is used of it: resource is the quota key (namespaces, pods,
// count/deployments.apps).
type QuotaSource interface {
	Quotas(yield func(tenant, resource string, used, limit float64))
}

var (
	quotaUsedDesc = prometheus.NewDesc("tenantguard_tenant_quota_used",
		"What a tenant holds, summed over its namespaces, for each tenant-wide limit in force: objects (namespaceQuota as resource namespaces, quotas by key) and resources (resourceQuota.hard by key, CPU in cores, memory and storage in bytes); requests being decided or admitted and not seen yet included.",
		[]string{"tenant", "resource"}, nil)
	quotaLimitDesc = prometheus.NewDesc("tenantguard_tenant_quota_limit",
		"A tenant's limit in force, by resource (namespaces, pods, count/deployments.apps, requests.cpu in cores, limits.memory in bytes ...).",
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
	c.source.Quotas(func(tenant, resource string, used, limit float64) {
		ch <- prometheus.MustNewConstMetric(quotaUsedDesc, prometheus.GaugeValue, used, tenant, resource)
		ch <- prometheus.MustNewConstMetric(quotaLimitDesc, prometheus.GaugeValue, limit, tenant, resource)
	})
}

// WatchQuotas exports the tenant-wide limits of source and their use as
// the gauges tenantguard_tenant_quota_used and _limit.
func (m *Metrics) WatchQuotas(source QuotaSource) {
	m.registry.MustRegister(quotaCollector{source})
}
