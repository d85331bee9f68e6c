package load

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPUAddsUserAndSystemTime(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr bool
	}{
		{"a plain command name", "42 (tgload) S 1 42 42 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 9 0 100 0 0", 2800 * time.Millisecond, false},
		{"a command name with spaces and parentheses", "42 (a (b) c) R 1 42 42 0 -1 0 0 0 0 0 7 3 0 0", 100 * time.Millisecond, false},
		{"no command name", "42 tgload S 1", 0, true},
		{"too few fields", "42 (tgload) S 1 42", 0, true},
		{"a time that is not a number", "42 (tgload) S 1 42 42 0 -1 0 0 0 0 0 x 3 0 0", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU(tt.stat)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("got %v, %v; want %v (error: %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestProcessCPUGrowsWithWork(t *testing.T) {
	before, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self0, err := selfCPU()
	if err != nil {
		t.Fatal(err)
	}
	// Work until getrusage has seen 100ms of CPU, however busy the
	// machine: /proc counts in 10ms ticks, so it must have seen most of it.
	deadline := time.Now().Add(30 * time.Second)
	for n := 0; time.Now().Before(deadline); n++ {
		if n%1000 == 0 {
			if self, err := selfCPU(); err != nil || self-self0 >= 100*time.Millisecond {
				break
			}
		}
	}
	self1, _ := selfCPU()
	after, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if self1-self0 < 100*time.Millisecond || after-before < 50*time.Millisecond {
		t.Fatalf("after %v of CPU by getrusage, /proc went from %v to %v", self1-self0, before, after)
	}
}
