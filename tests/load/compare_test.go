package load

import (
	"io"
	"os"
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
	// The second build names its binary: this test binary serves, as
	// another commit's tgload would.
	builds := []Build{{Name: "ceiling", Target: TargetNull}, {Name: "ours", Target: TargetTenantguard, Executable: os.Args[0]}}
	c, err := Compare(t.Context(), cfg, builds)
	if err != nil {
		t.Fatal(err)
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

func TestCompareRefusesATargetItCannotServe(t *testing.T) {
	_, err := Compare(t.Context(), Config{Log: io.Discard}, []Build{{Name: "classic", Target: TargetOPA}})
	if err == nil || !strings.Contains(err.Error(), `build "classic" serves "opa"`) {
		t.Fatalf("error %v; want the build and its target named", err)
	}
}
