package load

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/tenantguard/tenantguard/internal/memlimit"
	"github.com/tenantguard/tenantguard/tests/live"
)

// ChartServer is how the chart's default values run tenantguard serve: its
// --memory-limit (memoryLimit, auto being memlimit.AutoLimit of
// resources.limits.memory, as in the pod's cgroup) and --gc-percent, read
// from charts/tenantguard/values.yaml so that the soak follows the chart.
func ChartServer() (memoryLimit, gcPercent string, err error) {
	file := filepath.Join(live.Root(), "charts", "tenantguard", "values.yaml")
	raw, err := os.ReadFile(file)
	if err != nil {
		return "", "", err
	}
	var values struct {
		MemoryLimit string `json:"memoryLimit"`
		GCPercent   *int   `json:"gcPercent"`
		Resources   struct {
			Limits map[string]string `json:"limits"`
		} `json:"resources"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		return "", "", fmt.Errorf("%s: %w", file, err)
	}
	if values.GCPercent == nil {
		return "", "", fmt.Errorf("%s sets no gcPercent", file)
	}
	memoryLimit = values.MemoryLimit
	if memoryLimit == memlimit.Auto {
		q, err := resource.ParseQuantity(values.Resources.Limits["memory"])
		if err != nil {
			return "", "", fmt.Errorf("%s: resources.limits.memory: %w", file, err)
		}
		memoryLimit = strconv.FormatInt(memlimit.AutoLimit(q.Value()), 10)
	}
	return memoryLimit, strconv.Itoa(*values.GCPercent), nil
}
