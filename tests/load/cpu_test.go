package load

import (
	"os"
	"testing"
	"time"
)

// procCase is a /proc text and the time its parser should read from it.
type procCase struct {
	name    string
	stat    string
	want    time.Duration
	wantErr bool
}

// checkProcParser runs parse on every case.
func checkProcParser(t *testing.T, parse func(string) (time.Duration, error), cases []procCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(tt.stat)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("got %v, %v; want %v (error: %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseStatCPUAddsUserAndSystemTime(t *testing.T) {
	checkProcParser(t, parseStatCPU, []procCase{
		{"a plain command name", "42 (tgload) S 1 42 42 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 9 0 100 0 0", 2800 * time.Millisecond, false},
		{"a command name with spaces and parentheses", "42 (a (b) c) R 1 42 42 0 -1 0 0 0 0 0 7 3 0 0", 100 * time.Millisecond, false},
		{"no command name", "42 tgload S 1", 0, true},
		{"too few fields", "42 (tgload) S 1 42", 0, true},
		{"a time that is not a number", "42 (tgload) S 1 42 42 0 -1 0 0 0 0 0 x 3 0 0", 0, true},
	})
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

func TestParseStealReadsTheCPULinesEighthValue(t *testing.T) {
	checkProcParser(t, parseSteal, []procCase{
		{"the machine's line first", "cpu  4703054 2785 918606 5388956 49434 0 128598 3863 0 0\ncpu0 1 2 3 4 5 6 7 9 0 0\n", 38630 * time.Millisecond, false},
		{"no steal yet", "cpu  1 2 3 4 5 6 7 0 0 0\n", 0, false},
		{"a kernel without the steal value", "cpu  1 2 3 4 5 6 7\n", 0, true},
		{"a CPU's line, not the machine's", "cpu0 1 2 3 4 5 6 7 8 0 0\n", 0, true},
		{"a steal time that is not a number", "cpu  1 2 3 4 5 6 7 x 0 0\n", 0, true},
	})
	if _, err := stealTime(); err != nil {
		t.Errorf("this machine's steal time: %v", err)
	}
}
