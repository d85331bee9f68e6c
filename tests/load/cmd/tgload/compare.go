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
// from different commits) and the null webhook, saturated in turns, each
// build's figures and its ratios to the first build's.
func compare(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	cfg := load.Config{Log: os.Stderr}
	var builds []load.Build
	fs.Func("build", "`NAME=TARGET[@TGLOAD]`: a build to compare, serving TARGET (null or tenantguard) with the tgload binary TGLOAD (default: this one); repeat it, the first is the baseline", func(v string) error {
		b, err := parseBuild(v)
		builds = append(builds, b)
		return err
	})
	loadFlags(fs, &cfg)
	fs.DurationVar(&cfg.Saturate.Duration, "duration", 30*time.Second, "saturated run length of each build, over all its turns")
	fs.IntVar(&cfg.Rounds, "rounds", 10, "turns each build takes, each for duration/rounds, the order reversed every other round")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Saturate.Mode = load.Saturated
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := load.Compare(ctx, cfg, builds)
	if c == nil {
		return err
	}
	for i, r := range c.Results {
		_, _ = fmt.Fprintf(stdout, "%s: %s\n", r.Target, r.Summary())
		if i > 0 {
			_, _ = fmt.Fprintf(stdout, "  against %s: throughput %.3f×, server CPU per request %.3f×, server and harness %.3f×\n",
				c.Results[0].Target, c.Throughput[i], c.ServerCPU[i], c.TotalCPU[i])
		}
	}
	return err
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
