package load

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds, from 1 µs to a minute, to three
// significant digits.
const (
	lowestMicros  = 1
	highestMicros = int64(time.Minute / time.Microsecond)
	sigFigs       = 3
)

// newHistogram returns an empty latency histogram.
func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(lowestMicros, highestMicros, sigFigs)
}

// record adds one latency, clamped into the histogram's range.
func record(h *hdrhistogram.Histogram, d time.Duration) {
	us := min(max(d.Microseconds(), lowestMicros), highestMicros)
	_ = h.RecordValue(us) // cannot fail: the value is in range
}

// Percentiles are latency percentiles of a run.
type Percentiles struct {
	P50, P90, P99, P999, Max time.Duration
}

// percentiles reads the percentiles of a histogram.
func percentiles(h *hdrhistogram.Histogram) Percentiles {
	at := func(q float64) time.Duration { return time.Duration(h.ValueAtQuantile(q)) * time.Microsecond }
	return Percentiles{P50: at(50), P90: at(90), P99: at(99), P999: at(99.9), Max: time.Duration(h.Max()) * time.Microsecond}
}
