package main

import (
	"strings"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/tests/load"
)

func TestParseBuildReadsNameTargetAndBinary(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    load.Build
		wantErr bool
	}{
		{"this binary serves when none is named", "new=tenantguard", load.Build{Name: "new", Target: "tenantguard"}, false},
		{"another commit's binary", "base=tenantguard@/tmp/tgload-base", load.Build{Name: "base", Target: "tenantguard", Executable: "/tmp/tgload-base"}, false},
		{"the null webhook", "null=null", load.Build{Name: "null", Target: "null"}, false},
		{"a name is required", "=tenantguard", load.Build{}, true},
		{"an equals sign is required", "base", load.Build{}, true},
		{"a target is required", "base=", load.Build{}, true},
		{"a binary named by @ is required", "base=tenantguard@", load.Build{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseBuild(tt.in)
			if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
				t.Fatalf("parseBuild(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseCompareChoosesTheRunTheBuildsTakeInTurns(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    load.Run
		wantErr string
	}{
		{"without -rate the builds run saturated with -workers in flight", []string{"-workers", "32", "-duration", "20s"},
			load.Run{Mode: load.Saturated, Workers: 32, Duration: 20 * time.Second}, ""},
		{"-rate runs them open-loop at that rate with -open-workers in flight at most", []string{"-rate", "2000", "-open-workers", "128", "-duration", "40s"},
			load.Run{Mode: load.OpenLoop, Rate: 2000, Workers: 128, Duration: 40 * time.Second}, ""},
		{"a negative rate is refused", []string{"-rate", "-5"}, load.Run{}, "-rate -5 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, builds, err := parseCompare(append(tt.args, "-build", "null=null"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v; want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Saturate != tt.want {
				t.Errorf("run %+v; want %+v", cfg.Saturate, tt.want)
			}
			if len(builds) != 1 || builds[0] != (load.Build{Name: "null", Target: load.TargetNull}) {
				t.Errorf("builds %+v; want the null webhook", builds)
			}
		})
	}
}
