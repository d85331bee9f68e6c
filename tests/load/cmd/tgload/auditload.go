package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/tenantguard/tenantguard/tests/load"
)

// auditLoad is `tgload audit-load`: admission at 2,000 requests/s while
// tenantguard audits the scale cluster in the background (load.AuditLoad).
// It fails on an error, a wrong answer or no audit completed, not on a
// missed latency target, which the report tells.
func auditLoad(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("audit-load", flag.ContinueOnError)
	cfg := load.AuditLoadConfig{Log: os.Stderr}
	scaleFlags(fs, &cfg.Scale)
	fs.IntVar(&cfg.Corpus, "corpus", 2000, "distinct requests, sent in turn")
	fs.Float64Var(&cfg.Rate, "rate", load.LatencyRate, "offered requests per second (open-loop)")
	fs.IntVar(&cfg.Workers, "workers", 256, "most requests in flight")
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Minute, "each target's share of the run (an audit of the scale cluster takes minutes at 2,000/s: long enough for a few)")
	fs.IntVar(&cfg.Rounds, "rounds", 100, "turns each target takes, for duration/rounds each")
	fs.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "untimed warm-up per target")
	fs.Float64Var(&cfg.Share, "share", 0, "the audit's share of the time it runs (0: the loop's default)")
	fs.BoolVar(&cfg.Idle, "idle", true, "also measure tenantguard without the audit, in the same turns")
	if err := chartServerFlags(fs, &cfg.MemoryLimit, &cfg.GCPercent); err != nil {
		return err
	}
	fs.StringVar(&cfg.ProfileDir, "profile-dir", "", "write a CPU profile of each served target (TARGET.pprof) here")
	jsonOut := fs.String("json", "", "write the report as JSON here")
	benchmarks := fs.String("benchmarks", "", "BENCHMARKS.md whose `make bench-audit` section to rewrite")
	note := fs.String("note", "", "a sentence for the BENCHMARKS.md section (the machine was shared, say)")
	command := fs.String("command", "make bench-audit", "the command named in the report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	report, err := load.AuditLoad(ctx, cfg)
	if err != nil {
		return err
	}
	report.Date = time.Now().Format(time.DateOnly)
	report.Machine, report.Versions, report.Command = load.Machine(), load.Versions(""), *command
	if err := finish(stdout, report, *jsonOut, "audit-load"); err != nil {
		return err
	}
	if *benchmarks != "" {
		return load.UpdateAuditBenchmarks(*benchmarks, report.Markdown(*note))
	}
	return nil
}
