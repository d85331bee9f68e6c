package load

import (
	"strings"
	"testing"
	"time"
)

func TestTheEndToEndLinesAreTheMediansOfEachPodAndSetup(t *testing.T) {
	out := `goos: linux
BenchmarkReconcile-2 1 1000 ns/op
BenchmarkCreateEndToEnd/pod=complete/setup=none-2 500 2000000 ns/op 120.0 admission-µs/op 1900 p50-µs 4000 p99-µs
BenchmarkCreateEndToEnd/pod=complete/setup=none-2 500 2400000 ns/op 130.0 admission-µs/op 2100 p50-µs 5000 p99-µs
BenchmarkCreateEndToEnd/pod=complete/setup=none-2 500 2200000 ns/op 125.0 admission-µs/op 2000 p50-µs 4500 p99-µs
BenchmarkCreateEndToEnd/pod=defaulted/setup=vap+map-2 500 20000000 ns/op 18000 admission-µs/op 19000 p50-µs 45000 p99-µs
`
	micro, err := ParseMicro(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{Micro: micro}
	want := []EndToEnd{
		{Pod: "complete", Setup: "none", Mean: 2200 * time.Microsecond, P50: 2 * time.Millisecond, P99: 4500 * time.Microsecond, Admission: 125 * time.Microsecond},
		{Pod: "defaulted", Setup: "vap+map", Mean: 20 * time.Millisecond, P50: 19 * time.Millisecond, P99: 45 * time.Millisecond, Admission: 18 * time.Millisecond},
	}
	got := r.EndToEnd()
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	var table strings.Builder
	r.WriteEndToEnd(&table)
	if !strings.Contains(table.String(), "| defaulted | vap+map | 20ms | 19ms | 45ms | 18ms |") {
		t.Errorf("the table lacks the vap+map line:\n%s", table.String())
	}
}
