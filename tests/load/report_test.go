package load

import (
	"testing"
	"time"
)

func TestTableDurationsAreRoundedToTheirScale(t *testing.T) {
	tests := []struct {
		name string
		in   time.Duration
		want string
	}{
		{"seconds to the hundredth", 1234567 * time.Microsecond, "1.23s"},
		{"milliseconds to the hundredth", 1234567 * time.Nanosecond, "1.23ms"},
		{"microseconds to the tenth", 8234 * time.Nanosecond, "8.2µs"},
		{"hundreds of microseconds to the tenth", 460149 * time.Nanosecond, "460.1µs"},
		{"under a microsecond, the nanoseconds", 67 * time.Nanosecond, "67ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := round(tt.in).String(); got != tt.want {
				t.Fatalf("round(%v) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestThePlateauCheckSaysWhetherMoreInFlightRaisedTheThroughput(t *testing.T) {
	saturated := func(target string, workers int, throughput float64) Result {
		return Result{Target: target, Mode: Saturated, Workers: workers, Throughput: throughput}
	}
	tests := []struct {
		name    string
		results []Result
		want    string
	}{
		{
			"both within 5% of their saturated figure are at the plateau",
			[]Result{
				saturated(TargetNull, 64, 28000), saturated(TargetTenantguard, 64, 15000),
				saturated(TargetNull, 128, 27000), saturated(TargetTenantguard, 128, 15600),
			},
			"Plateau check: with twice the requests in flight, null 27000 req/s (-3.6%), tenantguard 15600 req/s (+4.0%), so the saturated figures are at the plateau.",
		},
		{
			"one more than 5% higher was taken below the plateau",
			[]Result{
				saturated(TargetNull, 16, 25000), saturated(TargetTenantguard, 16, 12500),
				saturated(TargetNull, 32, 25500), saturated(TargetTenantguard, 32, 14500),
			},
			"Plateau check: with twice the requests in flight, null 25500 req/s (+2.0%), tenantguard 14500 req/s (+16.0%), so a saturated figure was taken below the plateau: run with more `-workers`.",
		},
		{
			"no check in the run says nothing",
			[]Result{saturated(TargetNull, 64, 28000), saturated(TargetTenantguard, 64, 15000)},
			"",
		},
		{
			"a check for one target only says nothing",
			[]Result{saturated(TargetNull, 64, 28000), saturated(TargetTenantguard, 64, 15000), saturated(TargetNull, 128, 27000)},
			"",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{Results: tt.results}
			if got := r.Plateau(); got != tt.want {
				t.Fatalf("Plateau() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
