package load

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestASoakReloadsTheRegistryWhileEveryAnswerIsChecked(t *testing.T) {
	// 3 s measure no memory growth (MaxGrowth is out of reach here);
	// TestSoakProblemsNameEachMissedBar checks the growth bar.
	cfg := SoakConfig{
		Scale: Scale{Tenants: 20, Namespaces: 10, Pods: 2}, Corpus: 100,
		Rate: 200, Workers: 16, Duration: 3 * time.Second, Window: time.Second, Warmup: 200 * time.Millisecond,
		Reload: 500 * time.Millisecond, MaxGrowth: 10, LiveHeap: true, MaxLiveGrowth: 10, HeapProfiles: t.TempDir(), Log: io.Discard,
	}
	report, err := Soak(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Windows) != 3 {
		t.Fatalf("%d windows, want 3", len(report.Windows))
	}
	if report.Requests < 400 || report.Errors+report.Wrong > 0 {
		t.Errorf("%d requests, %d errors, %d wrong; want about 600 and none failed", report.Requests, report.Errors, report.Wrong)
	}
	if report.Reloads.Loaded < 3 || report.Reloads.Failed > 0 {
		t.Errorf("reloads %+v: want at least 3 put in force and none refused", report.Reloads)
	}
	if report.BaselineRSS <= 0 || report.FinalRSS <= 0 || report.PeakRSS < report.FinalRSS {
		t.Errorf("memory not measured: %+v", report)
	}
	// the live heap is a part of the resident memory
	if report.BaselineLive <= 0 || report.FinalLive <= 0 || report.FinalLive > report.FinalRSS {
		t.Errorf("live heap not measured: first %.1f MiB, last %.1f MiB (RSS %.1f MiB)", report.BaselineLive, report.FinalLive, report.FinalRSS)
	}
	for _, name := range []string{"first.pprof", "last.pprof"} {
		if info, err := os.Stat(filepath.Join(cfg.HeapProfiles, name)); err != nil || info.Size() == 0 {
			t.Errorf("heap profile %s not written: %v", name, err)
		}
	}
	if problems := report.Problems(); len(problems) > 0 {
		t.Errorf("problems: %v", problems)
	}
	var out strings.Builder
	report.Write(&out)
	for _, want := range []string{"errors 0, wrong decisions 0", "refused", "growth", "live heap (after a collection)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSoakProblemsNameEachMissedBar(t *testing.T) {
	r := &SoakReport{Config: SoakConfig{Rate: 1000, Reload: 10 * time.Second, MaxGrowth: 0.1, LiveHeap: true, MaxLiveGrowth: 0.05}}
	r.add(SoakWindow{Result: Result{Requests: 30000}, End: 30 * time.Second, RSS: 100, LiveHeap: 20})
	r.add(SoakWindow{Result: Result{Requests: 30000}, End: time.Minute, RSS: 110, LiveHeap: 20})
	r.add(SoakWindow{Result: Result{Requests: 30000}, End: 90 * time.Second, RSS: 120, LiveHeap: 22})
	r.add(SoakWindow{Result: Result{Requests: 30000, Errors: 2, Wrong: 1, Behind: true}, End: 2 * time.Minute, RSS: 125, LiveHeap: 22})
	r.Reloads = Reloads{Loaded: 3, Failed: 1}
	got := strings.Join(r.Problems(), "\n")
	for _, want := range []string{"2 errors and 1 wrong decisions", "ending at 2m0s fell behind 1000", "1 registry reloads refused", "only 3 registry reloads, fewer than half the 12 expected", "RSS grew 25.0% (100 to 125 MiB), over 10%", "the live heap grew 10.0% (20.0 to 22.0 MiB), over 5%"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if r.Requests != 120000 || r.Growth != 0.25 {
		t.Errorf("sums: %d requests, growth %v", r.Requests, r.Growth)
	}
}

func TestTheSoakRunsTheServerAsTheChartDoes(t *testing.T) {
	limit, gcPercent, err := ChartServer()
	if err != nil {
		t.Fatal(err)
	}
	// memoryLimit auto under the chart's resources.limits.memory is a byte
	// count below that limit (90% of 512Mi today)
	bytes, err := strconv.ParseInt(limit, 10, 64)
	if err != nil || bytes <= 0 || bytes >= 4<<30 {
		t.Errorf("the chart runs serve with --memory-limit %q; want a byte count under the pod's limit", limit)
	}
	if _, err := strconv.Atoi(gcPercent); err != nil {
		t.Errorf("the chart runs serve with --gc-percent %q: %v", gcPercent, err)
	}
}

func TestTheLiveHeapGrowthComparesTheMediansOfTheFirstAndLastThreeWindows(t *testing.T) {
	for _, c := range []struct {
		name            string
		live            []float64
		baseline, final float64
		fails           bool
	}{
		{"a steady heap whose caches fill in the first window passes", []float64{22.9, 24.2, 24.0, 25, 24.1, 24.3}, 24.0, 24.3, false},
		{"one last window caught holding an old snapshot passes", []float64{24.0, 24.2, 24.1, 24.3, 24.2, 31.9}, 24.1, 24.3, false},
		{"a heap that keeps growing fails", []float64{24.0, 24.2, 24.1, 25.5, 27.0, 28.5}, 24.1, 27.0, true},
		{"a short soak compares what it has", []float64{24.0, 27.0}, 24.0, 24.0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &SoakReport{Config: SoakConfig{LiveHeap: true, MaxLiveGrowth: 0.1}}
			for _, live := range c.live {
				r.add(SoakWindow{LiveHeap: live})
			}
			if r.BaselineLive != c.baseline || r.FinalLive != c.final {
				t.Errorf("baseline %.1f MiB and final %.1f MiB; want %.1f and %.1f", r.BaselineLive, r.FinalLive, c.baseline, c.final)
			}
			if problems := r.Problems(); (len(problems) > 0) != c.fails {
				t.Errorf("problems %v; want a failure: %t", problems, c.fails)
			}
		})
	}
}
