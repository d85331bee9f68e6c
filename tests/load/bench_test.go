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
		Log: io.Discard,
	}
	report, err := Bench(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Results) != 6 {
		t.Fatalf("%d results, want a saturated and an open-loop run for each of 3 targets", len(report.Results))
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
	for _, want := range []string{"| null | saturated", "| tenantguard | open-loop 50/s", "| opa |", "![latency percentiles", "≥ 3× the throughput"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}
