package registry

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tenantguard/tenantguard/internal/usage"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The checks of the companions' ResourceQuota and LimitRange that the API
// server makes of them (its ValidateResourceQuota and ValidateLimitRange):
// a registry that passed them only to have every namespace's companions
// refused would leave the tenant's namespaces without them.

// namespaceQuotaKey says why key is not a resource of a namespace's
// ResourceQuota, or nil, as the API server's ValidateResourceQuotaResourceName
// decides: a key naming a group or domain (count/deployments.apps,
// requests.nvidia.com/gpu, CLASS.storageclass.storage.k8s.io/requests.storage)
// passes, others must be one of the quota system's own names.
func namespaceQuotaKey(key string) error {
	if strings.Contains(key, "/") || slices.Contains(standardQuotaResources, key) ||
		strings.HasPrefix(key, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(key, corev1.DefaultResourceRequestsPrefix+corev1.ResourceHugePagesPrefix) {
		return nil
	}
	return fmt.Errorf("%q is not a resource a ResourceQuota limits: %s, hugepages-SIZE, or a name with a / (count/deployments.apps, requests.nvidia.com/gpu)", key, strings.Join(standardQuotaResources, ", "))
}

// standardQuotaResources are the quota system's own resource names: those
// of pods' and claims' compute and storage (usage's), and its object counts.
var standardQuotaResources = slices.Concat(usage.NativeKeys(), []string{
	"pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "persistentvolumeclaims",
	"configmaps", "services.nodeports", "services.loadbalancers",
})

func (c checker) namespaceQuota(p string, hard map[string]string) {
	for _, key := range sortedKeys(hard) {
		if err := namespaceQuotaKey(key); err != nil {
			c.at(p+"."+key, "%v", err)
		}
	}
}

// limitRangeItems checks what the API server checks of a LimitRange's
// items beyond their quantities: one item per type, no defaults for a Pod,
// a PersistentVolumeClaim's storage bounded, and min <= defaultRequest <=
// default <= max.
func (c checker) limitRangeItems(p string, items []LimitRangeItem) {
	seen := map[string]bool{}
	for i, item := range items {
		ip := fmt.Sprintf("%s[%d]", p, i)
		if seen[item.Type] {
			c.at(ip+".type", "type %q is given twice; a LimitRange has one item per type", item.Type)
		}
		seen[item.Type] = true
		switch item.Type {
		case string(corev1.LimitTypePod):
			if len(item.Default) > 0 || len(item.DefaultRequest) > 0 {
				c.at(ip, "default and defaultRequest may not be given for type Pod (the API server refuses them): give them for type Container")
			}
		case string(corev1.LimitTypePersistentVolumeClaim):
			if item.Min["storage"] == "" && item.Max["storage"] == "" {
				c.at(ip, "type PersistentVolumeClaim needs min or max storage (the API server refuses it without)")
			}
		}
		c.ordered(ip, item)
	}
}

// ordered checks min <= defaultRequest <= default <= max for each resource.
func (c checker) ordered(p string, item LimitRangeItem) {
	bounds := []struct {
		name   string
		values map[string]string
	}{{"min", item.Min}, {"defaultRequest", item.DefaultRequest}, {"default", item.Default}, {"max", item.Max}}
	keys := map[string]bool{}
	for _, b := range bounds {
		for k := range b.values {
			keys[k] = true
		}
	}
	for _, k := range sortedKeys(keys) {
		for i, low := range bounds {
			for _, high := range bounds[i+1:] {
				lq, lerr := resource.ParseQuantity(low.values[k])
				hq, herr := resource.ParseQuantity(high.values[k])
				if low.values[k] != "" && high.values[k] != "" && lerr == nil && herr == nil && lq.Cmp(hq) > 0 {
					c.at(p+"."+low.name+"."+k, "%s %s is greater than %s %s", low.name, low.values[k], high.name, high.values[k])
				}
			}
		}
	}
}
