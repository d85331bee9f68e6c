package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/tenantguard/tenantguard/tests/load"
)

// compare is `tgload compare`: builds of tenantguard (tgload binaries built
// from different commits) and the null webhook, saturated or at an
// open-loop rate, in turns; each build's figures and its ratios to the
// first build's.
func compare(args []string, stdout io.Writer) error {
	cfg, builds, err := parseCompare(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := load.Compare(ctx, cfg, builds)
	if c == nil {
		return err
	}
	for i, r := range c.Results {
		_, _ = fmt.Fprintf(stdout, "%s: %s\n", r.Target, r.Summary())
		if i > 0 {
			_, _ = fmt.Fprintf(stdout, "  against %s: throughput %.3f×, p99 %.3f×, server CPU per request %.3f×, server and harness %.3f×\n",
				c.Results[0].Target, c.Throughput[i], c.P99[i], c.ServerCPU[i], c.TotalCPU[i])
		}
	}
	return err
}

// parseCompare reads compare's flags: the builds, and the run they take
// in turns, saturated unless -rate asks for an open-loop one.
func parseCompare(args []string) (load.Config, []load.Build, error) {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	cfg := load.Config{Log: os.Stderr}
	var builds []load.Build
	fs.Func("build", "`NAME=TARGET[@TGLOAD]`: a build to compare, serving TARGET (null or tenantguard) with the tgload binary TGLOAD (default: this one); repeat it, the first is the baseline", func(v string) error {
		b, err := parseBuild(v)
		builds = append(builds, b)
		return err
	})
	loadFlags(fs, &cfg)
	fs.DurationVar(&cfg.Saturate.Duration, "duration", 30*time.Second, "run length of each build, over all its turns")
	fs.IntVar(&cfg.Rounds, "rounds", 10, "turns each build takes, each for duration/rounds, the order reversed every other round")
	fs.Float64Var(&cfg.Saturate.Rate, "rate", 0, "open-loop rate (requests/s) to compare latency at, with -open-workers requests in flight at most (0: saturated, with -workers)")
	fs.IntVar(&cfg.OpenWorkers, "open-workers", 256, "most requests in flight at -rate")
	if err := fs.Parse(args); err != nil {
		return cfg, nil, err
	}
	switch {
	case cfg.Saturate.Rate < 0:
		return cfg, nil, fmt.Errorf("-rate %g is negative", cfg.Saturate.Rate)
	case cfg.Saturate.Rate > 0:
		cfg.Saturate.Mode, cfg.Saturate.Workers = load.OpenLoop, cfg.OpenWorkers
	default:
		cfg.Saturate.Mode = load.Saturated
	}
	return cfg, builds, nil
}

// parseBuild reads NAME=TARGET[@TGLOAD].
func parseBuild(v string) (load.Build, error) {
	name, rest, ok := strings.Cut(v, "=")
	target, exe, at := strings.Cut(rest, "@")
	if !ok || name == "" || target == "" || (at && exe == "") {
		return load.Build{}, fmt.Errorf("%q is not NAME=TARGET[@TGLOAD]", v)
	}
	return load.Build{Name: name, Target: target, Executable: exe}, nil
}
