package load

import (
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets this test binary be the served target Bench starts, as the
// tgload binary is in `make bench`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		if err := ServeMain(os.Args[2:], os.Stdout); err != nil {
			_, _ = fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestBenchLoadsEveryTargetAndReportsTheTargets(t *testing.T) {
	opa, err := filepath.Abs(filepath.Join("..", "..", "bin", "opa"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(opa); err != nil {
		t.Fatalf("%v: run `make tools`", err)
	}
	cfg := Config{
		OPA: opa, Scale: Scale{Tenants: 20, Namespaces: 10, Pods: 2}, Corpus: 100,
		Warmup:   200 * time.Millisecond,
		Saturate: Run{Mode: Saturated, Workers: 4, Duration: time.Second},
		Rates:    []float64{50}, Step: time.Second, OpenWorkers: 16,
		OPAGrowth: []int{2},
		Log:       io.Discard,
	}
	report, err := Bench(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Results) != 8 {
		t.Fatalf("%d results, want a saturated and an open-loop run for each of 3 targets, and OPA's saturated on the uncounted and the counted requests", len(report.Results))
	}
	if len(report.OPAGrowth) != 2 || report.OPAGrowth[0].Scale.Tenants != 2 || report.OPAGrowth[1].Scale != cfg.Scale {
		t.Fatalf("growth %+v, want OPA's counted requests at 2 tenants, then at the full scale", report.OPAGrowth)
	}
	for _, g := range report.OPAGrowth {
		if res := g.Result; res.Errors+res.Wrong > 0 || res.Requests == 0 || res.Throughput <= 0 {
			t.Errorf("growth at %d tenants: %s", g.Scale.Tenants, res.Summary())
		}
	}
	if report.OPAGrowth[0].PeakRSS <= 0 {
		t.Errorf("the smaller OPA's memory was not measured: %+v", report.OPAGrowth[0])
	}
	for _, res := range report.Results {
		if res.Errors+res.Wrong > 0 || res.Requests == 0 || res.Throughput <= 0 || res.Latency.P99 <= 0 {
			t.Errorf("%s", res.Summary())
		}
	}
	for _, name := range []string{TargetNull, TargetTenantguard, TargetOPA} {
		if info := report.Targets[name]; info.RSS <= 0 || info.SaturatedRSS <= 0 || info.PeakRSS < info.RSS {
			t.Errorf("%s: memory %+v", name, info)
		}
	}
	if tg := report.Targets[TargetTenantguard]; tg.Ready <= 0 || tg.Sync <= 0 {
		t.Errorf("tenantguard's startup was not measured: %+v", tg)
	}

	plot := filepath.Join(t.TempDir(), "latency.png")
	if err := report.Plot(plot); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(plot)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	img, err := png.Decode(f)
	if err != nil || img.Bounds().Dx() < 600 {
		t.Errorf("plot: %v", err)
	}
	md := report.Markdown("latency.png")
	for _, want := range []string{"| null | saturated", "| tenantguard | open-loop 50/s", "| opa |", "| opa, no count | saturated", "| opa, counted | saturated", "![latency percentiles", "≥ 3× the throughput",
		"on the requests that need no tenant-wide count", "| 20 | 40 |", "| 200 | 400 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}

func TestTheLatencyRateRunsForItsOwnStepInItsOwnTurns(t *testing.T) {
	base := Config{Rates: []float64{500, LatencyRate}, Step: 5 * time.Second, Rounds: 4, OpenWorkers: 256}
	long := base
	long.LatencyStep, long.LatencyRounds = 30*time.Second, 30
	tests := []struct {
		name       string
		cfg        Config
		rate       float64
		wantLength time.Duration
		wantTurns  int
	}{
		{"the latency rate takes the latency step in its turns", long, LatencyRate, 30 * time.Second, 30},
		{"another rate keeps the step and the rounds", long, 500, 5 * time.Second, 4},
		{"without a latency step the latency rate keeps the step", base, LatencyRate, 5 * time.Second, 4},
		{"a latency step without rounds takes one turn", Config{Step: time.Second, LatencyStep: 3 * time.Second}, LatencyRate, 3 * time.Second, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run, turns := turnsAt(tt.cfg, tt.rate)
			if run.Mode != OpenLoop || run.Rate != tt.rate || run.Workers != tt.cfg.OpenWorkers || run.Duration != tt.wantLength || turns != tt.wantTurns {
				t.Errorf("got %+v in %d turns, want %s at %.0f/s in %d turns", run, turns, tt.wantLength, tt.rate, tt.wantTurns)
			}
		})
	}
}

func TestTheReportSaysHowLongTheLatencyRateRan(t *testing.T) {
	r := &Report{Rounds: 4, LatencyStep: 30 * time.Second, LatencyRounds: 30, Targets: map[string]TargetInfo{}}
	if md, want := r.Markdown(""), "at 2000/s, whose p99 the latency target compares, 30 s in 30 turns each"; !strings.Contains(md, want) {
		t.Errorf("the report lacks %q:\n%s", want, md)
	}
	r.LatencyStep = 0
	if md := r.Markdown(""); strings.Contains(md, "whose p99") {
		t.Errorf("a report without a latency step speaks of one:\n%s", md)
	}
}
