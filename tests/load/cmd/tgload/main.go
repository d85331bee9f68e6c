// Command tgload is tenantguard's load harness (package load): `tgload run`
// compares tenantguard's webhook with the null webhook and `opa run
// --server` under load and reports the performance targets; `tgload
// compare` runs builds of tenantguard from different commits in turns;
// `tgload soak` holds a rate and watches memory; `tgload audit-load`
// measures admission while tenantguard audits in the background; `tgload
// serve` is the target process they start.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tenantguard/tenantguard/tests/load"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		_, _ = fmt.Fprintln(os.Stderr, "tgload:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: tgload run|compare|soak|audit-load|serve|opa-files [flags]")
	}
	switch args[0] {
	case "serve":
		return load.ServeMain(args[1:], stdout)
	case "run":
		return bench(args[1:], stdout)
	case "compare":
		return compare(args[1:], stdout)
	case "soak":
		return soak(args[1:], stdout)
	case "opa-files":
		return opaFiles(args[1:], stdout)
	case "audit-load":
		return auditLoad(args[1:], stdout)
	}
	return fmt.Errorf("unknown command %q: run, compare, soak, audit-load, serve or opa-files", args[0])
}

// soak is `tgload soak`: it fails when the soak misses its bar.
func soak(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	cfg := load.SoakConfig{Log: os.Stderr}
	scaleFlags(fs, &cfg.Scale)
	fs.IntVar(&cfg.Corpus, "corpus", 2000, "distinct requests, sent in turn (the control set)")
	fs.Float64Var(&cfg.Rate, "rate", 1000, "offered requests per second (open-loop)")
	fs.IntVar(&cfg.Workers, "workers", 256, "most requests in flight")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Minute, "soak length")
	fs.DurationVar(&cfg.Window, "window", time.Minute, "figures and RSS per window")
	fs.DurationVar(&cfg.Warmup, "warmup", 30*time.Second, "untimed warm-up at the same rate")
	fs.DurationVar(&cfg.Reload, "reload", 10*time.Second, "registry reload period")
	fs.Float64Var(&cfg.MaxGrowth, "max-growth", 0.10, "RSS growth allowed over the baseline (fraction)")
	if err := chartServerFlags(fs, &cfg.MemoryLimit, &cfg.GCPercent); err != nil {
		return err
	}
	fs.BoolVar(&cfg.LiveHeap, "live-heap", true, "collect the target's garbage after each window and hold its live heap to -max-live-growth")
	fs.Float64Var(&cfg.MaxLiveGrowth, "max-live-growth", load.DefaultMaxLiveGrowth, "live heap growth allowed, the median of the last three windows against that of the first three (fraction)")
	fs.StringVar(&cfg.HeapProfiles, "heap-profiles", "", "write the target's heap profiles after the first and last windows here (first.pprof, last.pprof)")
	jsonOut := fs.String("json", "", "write the report as JSON here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	report, err := load.Soak(ctx, cfg)
	if err != nil {
		return err
	}
	if err := finish(stdout, report, *jsonOut, "soak"); err != nil {
		return err
	}
	_, _ = fmt.Fprintln(stdout, "soak passed")
	return nil
}

// opaFiles is `tgload opa-files`: the bundle, the replicated cluster and
// one request of each kind of the corpus, for `opa bench` (see
// docs/policy-library.md).
func opaFiles(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("opa-files", flag.ContinueOnError)
	var s load.Scale
	scaleFlags(fs, &s)
	dir := fs.String("dir", "", "directory to write bundle.tar.gz, data.json and KIND.json into (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("opa-files: -dir is required")
	}
	if err := load.WriteOPAFiles(*dir, s); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stdout, "wrote %s: bundle.tar.gz, data.json (%d namespaces, %d pods) and one AdmissionReview per kind of request\n", *dir, s.Tenants*s.Namespaces, s.Tenants*s.Namespaces*s.Pods)
	return nil
}

// writeJSON writes v as indented JSON.
func writeJSON(file string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(data, '\n'), 0o644) //nolint:gosec // a report to read
}

// bench is `tgload run`.
func bench(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	cfg := load.Config{Log: os.Stderr}
	fs.StringVar(&cfg.OPA, "opa", "", "opa binary for the classic OPA setup (empty: leave it out)")
	growth := fs.String("opa-growth", "10,100", "smaller clusters, in tenants of -namespaces namespaces and -pods pods each, at which the classic OPA setup also answers the requests that need a tenant-wide count (the growth table; the full scale is always in it, sizes not under -tenants are left out; empty: none)")
	loadFlags(fs, &cfg)
	fs.DurationVar(&cfg.Saturate.Duration, "duration", 10*time.Second, "saturated run length")
	fs.IntVar(&cfg.Rounds, "rounds", 4, "turns the null webhook and tenantguard take at the saturated run and at each open-loop rate but the latency target's (-latency-rounds), alternating, each for duration/rounds and step/rounds")
	rates := fs.String("rates", "500,1000,2000,3000,4000,6000", "open-loop rates (requests/s)")
	fs.DurationVar(&cfg.Step, "step", 5*time.Second, "open-loop run length per rate but the latency target's (-latency-step)")
	fs.DurationVar(&cfg.LatencyStep, "latency-step", time.Minute, fmt.Sprintf("run length at %d/s, whose p99 the latency target compares, instead of -step (0: -step)", load.LatencyRate))
	fs.IntVar(&cfg.LatencyRounds, "latency-rounds", 60, fmt.Sprintf("turns at %d/s instead of -rounds, when -latency-step is set", load.LatencyRate))
	fs.IntVar(&cfg.OpenWorkers, "open-workers", 256, "most requests in flight in open-loop")
	micro := fs.String("micro", "", "comma-separated `go test -bench` outputs to include")
	jsonOut := fs.String("json", "", "write the report as JSON here")
	benchmarks := fs.String("benchmarks", "", "BENCHMARKS.md whose generated section to rewrite")
	plotFile := fs.String("plot", "", "write the latency plot (PNG) here")
	fs.StringVar(&cfg.ProfileDir, "profile-dir", "", "write a CPU profile of each served target (TARGET.pprof) here")
	command := fs.String("command", "make bench", "the command named in the report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Saturate.Mode = load.Saturated
	for f := range strings.SplitSeq(*growth, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		tenants, err := strconv.Atoi(f)
		if err != nil || tenants <= 0 {
			return fmt.Errorf("bad -opa-growth %q: a number of tenants", f)
		}
		if tenants < cfg.Scale.Tenants { // the full scale is measured anyway; a larger one is not wanted
			cfg.OPAGrowth = append(cfg.OPAGrowth, tenants)
		}
	}
	for f := range strings.SplitSeq(*rates, ",") {
		rate, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || rate <= 0 {
			return fmt.Errorf("bad rate %q", f)
		}
		cfg.Rates = append(cfg.Rates, rate)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	report, err := load.Bench(ctx, cfg)
	if err != nil {
		return err
	}
	report.Date = time.Now().Format(time.DateOnly)
	report.Machine, report.Versions, report.Command = load.Machine(), load.Versions(cfg.OPA), *command
	if *micro != "" {
		for f := range strings.SplitSeq(*micro, ",") {
			ms, err := readMicro(f)
			if err != nil {
				return err
			}
			report.Micro = append(report.Micro, ms...)
		}
	}
	return write(report, stdout, *jsonOut, *benchmarks, *plotFile)
}

// loadFlags are the flags of run and compare that shape the cluster, the
// corpus, the saturated runs and tenantguard's memory settings.
func loadFlags(fs *flag.FlagSet, cfg *load.Config) {
	scaleFlags(fs, &cfg.Scale)
	fs.IntVar(&cfg.Corpus, "corpus", 2000, "distinct requests, sent in turn")
	fs.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "untimed warm-up per target")
	fs.IntVar(&cfg.Saturate.Workers, "workers", load.SaturatedWorkers, "closed-loop workers: the requests kept in flight in the saturated runs")
	fs.StringVar(&cfg.MemoryLimit, "memory-limit", "0", "tenantguard's soft memory limit, as serve --memory-limit takes it (0: none)")
	fs.StringVar(&cfg.GCPercent, "gc-percent", "", "tenantguard's garbage collector target, as serve --gc-percent takes it (empty: serve's default)")
}

func readMicro(file string) ([]load.Micro, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return load.ParseMicro(f)
}

// write prints the summary and writes the JSON, the plot and the
// BENCHMARKS.md section.
func write(report *load.Report, stdout io.Writer, jsonOut, benchmarks, plotFile string) error {
	_, _ = fmt.Fprintln(stdout)
	report.WriteRuns(stdout)
	_, _ = fmt.Fprintln(stdout)
	report.WriteSummary(stdout)
	if len(report.EndToEnd()) > 0 {
		_, _ = fmt.Fprintln(stdout)
		report.WriteEndToEnd(stdout)
	}
	if jsonOut != "" {
		if err := writeJSON(jsonOut, report); err != nil {
			return err
		}
	}
	link := ""
	if plotFile != "" {
		if err := report.Plot(plotFile); err != nil {
			return err
		}
		link = plotFile
		if benchmarks != "" {
			if rel, err := filepath.Rel(filepath.Dir(benchmarks), plotFile); err == nil {
				link = rel
			}
		}
	}
	if benchmarks != "" {
		return load.UpdateBenchmarks(benchmarks, report.Markdown(link))
	}
	return nil
}
