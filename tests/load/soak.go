package load

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/tenantguard/tenantguard/tests/scale"
)

// DefaultMaxLiveGrowth is the live heap growth a soak allows, last windows
// against first: more than the noise of a registry reload caught in flight
// and the decode cache's turnover, less than what a snapshot kept per
// reload adds.
const DefaultMaxLiveGrowth = 0.10

// SoakConfig is a long open-loop run against tenantguard while its
// registry is reloaded: the reliability soak of `make soak`.
type SoakConfig struct {
	// Scale is the cluster the target holds; Corpus the distinct requests
	// sent in turn, whose expected decisions are the control set.
	Scale  Scale `json:"scale"`
	Corpus int   `json:"corpus"`
	// Rate is the offered requests per second, with at most Workers in
	// flight, for Duration in windows of Window, after an untimed Warmup
	// at the same rate.
	Rate     float64       `json:"rate"`
	Workers  int           `json:"workers"`
	Duration time.Duration `json:"duration"`
	Window   time.Duration `json:"window"`
	Warmup   time.Duration `json:"warmup"`
	// Reload is how often the target loads a changed registry.
	Reload time.Duration `json:"reload"`
	// MaxGrowth is the RSS growth allowed, as a fraction of the baseline.
	MaxGrowth float64 `json:"maxGrowth"`
	// MemoryLimit and GCPercent run tenantguard as serve --memory-limit and
	// --gc-percent take them: the chart's settings by default
	// (ChartMemoryLimit, ChartGCPercent).
	MemoryLimit string `json:"memoryLimit"`
	GCPercent   string `json:"gcPercent"`
	// LiveHeap, when set, has the target collect its garbage after each
	// window and report its live heap; MaxLiveGrowth is then the growth of
	// the live heap allowed, last windows against first, as a fraction.
	LiveHeap      bool    `json:"liveHeap"`
	MaxLiveGrowth float64 `json:"maxLiveGrowth"`
	// HeapProfiles, when set, is a folder that receives the target's heap
	// profiles after the first and the last window (first.pprof,
	// last.pprof), to compare with go tool pprof -base.
	HeapProfiles string `json:"heapProfiles,omitempty"`
	// Log receives a line per window.
	Log io.Writer `json:"-"`
}

// SoakWindow is one window of a soak: its run and the target's RSS,
// sampled every second, as the median and the highest sample. The median
// is what the growth compares: a leak moves it, a garbage collection that
// is a second late does not.
type SoakWindow struct {
	Result
	End    time.Duration `json:"end"`
	RSS    float64       `json:"rssMiB"`
	MaxRSS float64       `json:"maxRssMiB"`
	// LiveHeap is the target's live heap after the window, in MiB, after a
	// forced collection (SoakConfig.LiveHeap).
	LiveHeap float64 `json:"liveHeapMiB,omitempty"`
}

// driveSampling drives one run and samples the target's RSS every second
// meanwhile.
func driveSampling(ctx context.Context, p *Process, t *Target, corpus []scale.Request, run Run) (res Result, median, highest float64, err error) {
	done := make(chan Result, 1)
	go func() { done <- Drive(ctx, t, corpus, run) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var samples []float64
	for {
		select {
		case res = <-done:
			if len(samples) == 0 {
				rss, _, err := p.Memory()
				samples = append(samples, rss)
				if err != nil {
					return res, 0, 0, err
				}
			}
			slices.Sort(samples)
			return res, samples[len(samples)/2], samples[len(samples)-1], nil
		case <-tick.C:
			rss, _, err := p.Memory()
			if err != nil {
				<-done
				return res, 0, 0, err
			}
			samples = append(samples, rss)
		}
	}
}

// SoakReport is what a soak measured.
type SoakReport struct {
	Config  SoakConfig   `json:"config"`
	Windows []SoakWindow `json:"windows"`
	// Requests, Errors and Wrong are summed over the windows.
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	Wrong    int64 `json:"wrong"`
	// BaselineRSS is the median RSS of the first window, FinalRSS that of
	// the last, PeakRSS the process's high-water mark, in MiB; Growth is
	// (FinalRSS - BaselineRSS) / BaselineRSS.
	BaselineRSS float64 `json:"baselineRssMiB"`
	FinalRSS    float64 `json:"finalRssMiB"`
	PeakRSS     float64 `json:"peakRssMiB"`
	Growth      float64 `json:"rssGrowth"`
	// BaselineLive is the median live heap after the first three windows
	// (the caches still fill during the first), FinalLive that after the
	// last three, in MiB; LiveGrowth is their growth as a fraction. A
	// window's figure counts whatever the requests in flight hold, an
	// older snapshot among them, so that one window alone can be high:
	// a leak raises all three.
	BaselineLive float64 `json:"baselineLiveHeapMiB,omitempty"`
	FinalLive    float64 `json:"finalLiveHeapMiB,omitempty"`
	LiveGrowth   float64 `json:"liveHeapGrowth,omitempty"`
	// WorstP99 is the highest window p99.
	WorstP99 time.Duration `json:"worstP99"`
	// Reloads is the target's registry reloads over the whole soak.
	Reloads Reloads `json:"reloads"`
}

// Soak starts tenantguard with the scale cluster and registry reloads,
// warms it up, then drives it open-loop window after window, recording each
// window's figures and the target's RSS.
func Soak(ctx context.Context, cfg SoakConfig) (*SoakReport, error) {
	if cfg.Window <= 0 || cfg.Duration <= 0 {
		return nil, fmt.Errorf("a soak needs a positive duration and window, got %v and %v", cfg.Duration, cfg.Window)
	}
	dir, certFile, keyFile, pool, err := servingCert("tgsoak")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	p, st, err := StartServed(ctx, TargetTenantguard, certFile, keyFile, cfg.Scale, ServedOptions{Reload: cfg.Reload, MemoryLimit: cfg.MemoryLimit, GCPercent: cfg.GCPercent})
	if err != nil {
		return nil, err
	}
	defer p.Stop()
	target := &Target{Name: TargetTenantguard, URL: "https://" + st.Addr + "/validate?timeout=10s", Client: newClient(pool, cfg.Workers), Decides: true}
	if err := decideEveryNamespace(ctx, target, cfg.Scale, cfg.Workers); err != nil {
		return nil, err
	}
	corpus := scale.Corpus(cfg.Scale.Tenants, cfg.Corpus)
	run := Run{Mode: OpenLoop, Rate: cfg.Rate, Workers: cfg.Workers, Duration: cfg.Warmup}
	if warm := Drive(ctx, target, corpus, run); warm.Errors+warm.Wrong > 0 {
		return nil, fmt.Errorf("%d errors and %d wrong answers while warming up; first: %s", warm.Errors, warm.Wrong, warm.FirstError)
	}
	report := &SoakReport{Config: cfg}
	start := time.Now()
	// A fixed number of windows: a window's run can end a little before its
	// duration (its last request sent and answered), which must not add a
	// sliver of a window at the end.
	for offered := time.Duration(0); offered < cfg.Duration && ctx.Err() == nil; offered += run.Duration {
		run.Duration = min(cfg.Window, cfg.Duration-offered)
		var w SoakWindow
		if w.Result, w.RSS, w.MaxRSS, err = driveSampling(ctx, p, target, corpus, run); err != nil {
			return nil, err
		}
		w.End = time.Since(start).Round(time.Second)
		if cfg.LiveHeap {
			if w.LiveHeap, err = liveHeapMiB(p, cfg.HeapProfiles, len(report.Windows) == 0, offered+run.Duration >= cfg.Duration); err != nil {
				return nil, err
			}
		}
		report.add(w)
		_, _ = fmt.Fprintf(cfg.Log, "soak %v: %s, rss median %.0f MiB (highest %.0f), live heap %.1f MiB, reloads %d\n", w.End, w.Summary(), w.RSS, w.MaxRSS, w.LiveHeap, p.Reloads().Loaded)
	}
	if _, report.PeakRSS, err = p.Memory(); err != nil {
		return nil, err
	}
	report.Reloads = p.Reloads()
	return report, ctx.Err()
}

// liveHeapMiB asks the target for its live heap, with a heap profile into
// dir after the first and the last window.
func liveHeapMiB(p *Process, dir string, first, last bool) (float64, error) {
	profile := ""
	switch {
	case dir == "":
	case first:
		profile = filepath.Join(dir, "first.pprof")
	case last:
		profile = filepath.Join(dir, "last.pprof")
	}
	live, err := p.LiveHeap(profile)
	return float64(live) / (1 << 20), err
}

// medianLive is the median live heap of windows (the lower one of an even
// count).
func medianLive(windows []SoakWindow) float64 {
	live := make([]float64, len(windows))
	for i, w := range windows {
		live[i] = w.LiveHeap
	}
	slices.Sort(live)
	return live[(len(live)-1)/2]
}

func (r *SoakReport) add(w SoakWindow) {
	if len(r.Windows) == 0 {
		r.BaselineRSS = w.RSS
	}
	r.Windows = append(r.Windows, w)
	r.BaselineLive = medianLive(r.Windows[:min(len(r.Windows), 3)])
	r.FinalLive = medianLive(r.Windows[max(len(r.Windows)-3, 0):])
	r.LiveGrowth = safeRatio(r.FinalLive-r.BaselineLive, r.BaselineLive)
	r.Requests += w.Requests
	r.Errors += w.Errors
	r.Wrong += w.Wrong
	r.FinalRSS = w.RSS
	r.Growth = safeRatio(r.FinalRSS-r.BaselineRSS, r.BaselineRSS)
	r.WorstP99 = max(r.WorstP99, w.Latency.P99)
}

// Problems are the ways the soak failed its bar: errors, wrong decisions,
// a run that fell behind its rate, refused or missing reloads, RSS growth
// over MaxGrowth. None means it passed.
func (r *SoakReport) Problems() []string {
	var out []string
	if r.Errors+r.Wrong > 0 {
		out = append(out, fmt.Sprintf("%d errors and %d wrong decisions", r.Errors, r.Wrong))
	}
	for _, w := range r.Windows {
		if w.Behind {
			out = append(out, fmt.Sprintf("the window ending at %v fell behind %.0f requests/s", w.End, r.Config.Rate))
		}
	}
	if r.Reloads.Failed > 0 {
		out = append(out, fmt.Sprintf("%d registry reloads refused", r.Reloads.Failed))
	}
	if r.Config.Reload > 0 && len(r.Windows) > 0 {
		total := r.Windows[len(r.Windows)-1].End + r.Config.Warmup
		if expected := int64(total / r.Config.Reload); r.Reloads.Loaded < expected/2 {
			out = append(out, fmt.Sprintf("only %d registry reloads, fewer than half the %d expected", r.Reloads.Loaded, expected))
		}
	}
	if r.Config.LiveHeap && r.LiveGrowth > r.Config.MaxLiveGrowth {
		out = append(out, fmt.Sprintf("the live heap grew %.1f%% (%.1f to %.1f MiB), over %.0f%%", 100*r.LiveGrowth, r.BaselineLive, r.FinalLive, 100*r.Config.MaxLiveGrowth))
	}
	if r.Growth > r.Config.MaxGrowth {
		out = append(out, fmt.Sprintf("RSS grew %.1f%% (%.0f to %.0f MiB), over %.0f%%", 100*r.Growth, r.BaselineRSS, r.FinalRSS, 100*r.Config.MaxGrowth))
	}
	return out
}

// Write prints the soak's figures as a table.
func (r *SoakReport) Write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	c := r.Config
	_, _ = fmt.Fprintf(tw, "scale\t%d tenants, %d namespaces, %d pods\n", c.Scale.Tenants, c.Scale.Tenants*c.Scale.Namespaces, c.Scale.Tenants*c.Scale.Namespaces*c.Scale.Pods)
	_, _ = fmt.Fprintf(tw, "offered\t%.0f requests/s open-loop for %v (windows of %v), registry reload every %v\n", c.Rate, c.Duration, c.Window, c.Reload)
	_, _ = fmt.Fprintf(tw, "requests\t%d (errors %d, wrong decisions %d)\n", r.Requests, r.Errors, r.Wrong)
	_, _ = fmt.Fprintf(tw, "reloads\t%d put in force, %d refused, slowest %v\n", r.Reloads.Loaded, r.Reloads.Failed, round(r.Reloads.Slowest))
	_, _ = fmt.Fprintf(tw, "worst window p99\t%v\n", round(r.WorstP99))
	_, _ = fmt.Fprintf(tw, "RSS (window medians)\tfirst %.1f MiB, last %.1f MiB, growth %+.1f%%, peak %.1f MiB\n", r.BaselineRSS, r.FinalRSS, 100*r.Growth, r.PeakRSS)
	if c.LiveHeap {
		_, _ = fmt.Fprintf(tw, "live heap (after a collection)\tfirst windows %.1f MiB, last windows %.1f MiB (medians of 3), growth %+.1f%%\n", r.BaselineLive, r.FinalLive, 100*r.LiveGrowth)
	}
	_, _ = fmt.Fprintf(tw, "server\tmemory limit %s, gc-percent %s\n", orNone(c.MemoryLimit), orNone(c.GCPercent))
	_ = tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
