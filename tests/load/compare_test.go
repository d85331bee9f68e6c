package load

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCompareRunsEachBuildInTurnsAndGivesItsRatiosToTheFirst(t *testing.T) {
	cfg := Config{
		Scale: Scale{Tenants: 20, Namespaces: 10, Pods: 2}, Corpus: 100,
		Warmup:   200 * time.Millisecond,
		Saturate: Run{Mode: Saturated, Workers: 4, Duration: time.Second},
		Rounds:   2,
		Log:      io.Discard,
	}
	// The second build is served by the binary it names: a script that
	// leaves a mark and runs this test binary, as another commit's tgload
	// would serve that commit's tenantguard.
	dir := t.TempDir()
	mark := filepath.Join(dir, "served")
	script := filepath.Join(dir, "tgload")
	body := fmt.Sprintf("#!/bin/sh\ntouch %q\nexec %q \"$@\"\n", mark, os.Args[0])
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	builds := []Build{{Name: "ceiling", Target: TargetNull}, {Name: "ours", Target: TargetTenantguard, Executable: script}}
	c, err := Compare(t.Context(), cfg, builds)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("the build's own binary did not serve it: %v", err)
	}
	if len(c.Results) != 2 || c.Results[0].Target != "ceiling" || c.Results[1].Target != "ours" {
		t.Fatalf("results %+v, want ceiling's then ours", c.Results)
	}
	for i, r := range c.Results {
		if r.Errors+r.Wrong > 0 || r.Requests == 0 || r.TargetCPU <= 0 {
			t.Errorf("%s", r.Summary())
		}
		want := r.Throughput / c.Results[0].Throughput
		if c.Throughput[i] != want || c.ServerCPU[i] <= 0 || c.TotalCPU[i] <= 0 {
			t.Errorf("%s: ratios %v, %v, %v; want throughput %v and CPU ratios known", r.Target, c.Throughput[i], c.ServerCPU[i], c.TotalCPU[i], want)
		}
	}
	if c.Throughput[0] != 1 || c.ServerCPU[0] != 1 {
		t.Errorf("the first build's ratios to itself are %v and %v", c.Throughput[0], c.ServerCPU[0])
	}
}

func TestCompareAtARateRunsEachBuildOpenLoopAndGivesItsLatencyRatioToTheFirst(t *testing.T) {
	cfg := Config{
		Scale: Scale{Tenants: 20, Namespaces: 10, Pods: 2}, Corpus: 100,
		Warmup:   200 * time.Millisecond,
		Saturate: Run{Mode: OpenLoop, Rate: 200, Workers: 8, Duration: time.Second},
		Rounds:   2,
		Log:      io.Discard,
	}
	builds := []Build{{Name: "ceiling", Target: TargetNull}, {Name: "ours", Target: TargetTenantguard}}
	c, err := Compare(t.Context(), cfg, builds)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range c.Results {
		// 1 s at 200/s over two turns: 200 requests, not one more.
		if r.Mode != OpenLoop || r.Rate != 200 || r.Requests < 180 || r.Requests > 200 || r.Behind {
			t.Errorf("%s: %s; want 180-200 requests open-loop at 200/s", r.Target, r.Summary())
		}
		want := float64(r.Latency.P99) / float64(c.Results[0].Latency.P99)
		if r.Latency.P99 <= 0 || c.P99[i] != want {
			t.Errorf("%s: p99 %v, ratio %v; want %v", r.Target, r.Latency.P99, c.P99[i], want)
		}
	}
}

func TestCompareRefusesBuildsItCannotRunBeforeStartingAny(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "tgload")
	tests := []struct {
		name   string
		builds []Build
		want   string
	}{
		{"no build", nil, "no build to compare"},
		{"a target it does not serve", []Build{{Name: "classic", Target: TargetOPA}}, `build "classic" serves "opa"`},
		{"two builds of one name", []Build{{Name: "a", Target: TargetNull}, {Name: "a", Target: TargetTenantguard}}, `two builds are named "a"`},
		{"a binary that is not there", []Build{{Name: "null", Target: TargetNull}, {Name: "base", Target: TargetTenantguard, Executable: missing}}, `build "base": stat ` + missing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log strings.Builder
			_, err := Compare(t.Context(), Config{Log: &log}, tt.builds)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one with %q", err, tt.want)
			}
			if log.Len() > 0 {
				t.Errorf("a build was started before the refusal: %s", log.String())
			}
		})
	}
}
