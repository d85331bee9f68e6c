package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/tenantguard/tenantguard/tests/load"
)

// scaleFlags are the flags of the scale cluster's size, the scale fixture's
// default: 1,000 tenants, 10,000 namespaces, 100,000 pods.
func scaleFlags(fs *flag.FlagSet, s *load.Scale) {
	fs.IntVar(&s.Tenants, "tenants", 1000, "tenants")
	fs.IntVar(&s.Namespaces, "namespaces", 10, "namespaces per tenant")
	fs.IntVar(&s.Pods, "pods", 10, "pods per namespace")
}

// chartServerFlags are the flags of tenantguard's memory settings, the
// chart's by default: the server run as the chart runs it.
func chartServerFlags(fs *flag.FlagSet, memoryLimit, gcPercent *string) error {
	limit, percent, err := load.ChartServer()
	if err != nil {
		return err
	}
	fs.StringVar(memoryLimit, "memory-limit", limit, "tenantguard's soft memory limit, as serve --memory-limit takes it (default: the chart's, auto under its memory limit)")
	fs.StringVar(gcPercent, "gc-percent", percent, "tenantguard's collector target, as serve --gc-percent takes it (default: the chart's)")
	return nil
}

// checkedReport is a report that says what went wrong in its run.
type checkedReport interface {
	Write(io.Writer)
	Problems() []string
}

// finish prints a report, writes it as JSON when asked, and fails with its
// problems, if any, naming the command (what).
func finish(stdout io.Writer, report checkedReport, jsonOut, what string) error {
	_, _ = fmt.Fprintln(stdout)
	report.Write(stdout)
	if jsonOut != "" {
		if err := writeJSON(jsonOut, report); err != nil {
			return err
		}
	}
	if problems := report.Problems(); len(problems) > 0 {
		return fmt.Errorf("%s failed: %s", what, strings.Join(problems, "; "))
	}
	return nil
}
