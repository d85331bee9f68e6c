package load

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/tenantguard/tenantguard/tests/scale"
)

// Mode is how a run offers load.
type Mode string

// The two modes.
const (
	// Saturated is closed-loop: workers send back to back.
	Saturated Mode = "saturated"
	// OpenLoop sends at a fixed rate whatever the answers' pace.
	OpenLoop Mode = "open-loop"
)

// SaturatedWorkers is how many requests the saturated run keeps in flight
// by default. Saturated throughput is the plateau: more requests in flight
// must not raise it. On the 2-core machines here, with the harness on the
// same cores, 16 was below the plateau, tenantguard's more than the null
// webhook's. Measured in turns (BENCHMARKS.md, 2026-11-24, session 18):
// from 16 to 64 in flight the null webhook went from 24.6-25.3k to
// 27.2-27.7k requests/s and tenantguard from 12.4-12.9k to 15.7-16.0k;
// at 128 neither rose further.
const SaturatedWorkers = 64

// Run bounds and shapes one run.
type Run struct {
	Mode Mode
	// Rate is the offered requests per second (open-loop only).
	Rate float64
	// Workers is the number of concurrent senders: the load in closed-loop,
	// the most requests in flight in open-loop.
	Workers int
	// Duration bounds the run.
	Duration time.Duration
	// MaxRequests bounds it too; 0 means no bound but the duration.
	MaxRequests int
}

// Result is what a run measured.
type Result struct {
	Target   string  `json:"target"`
	Mode     Mode    `json:"mode"`
	Rate     float64 `json:"rate,omitempty"`
	Workers  int     `json:"workers"`
	Requests int64   `json:"requests"`
	// Errors are failed requests and answers that are not the request's
	// AdmissionReview; Wrong are answers with the wrong decision.
	Errors int64 `json:"errors"`
	Wrong  int64 `json:"wrong"`
	// FirstError describes the first error or wrong answer.
	FirstError string `json:"firstError,omitempty"`
	// Throughput is answered requests per second over the run.
	Throughput float64 `json:"throughput"`
	// Latency percentiles: from sending in closed-loop, from when the request
	// was due in open-loop, to the answer's last byte (checking it is not
	// counted).
	Latency Percentiles `json:"latency"`
	// Behind is set when an open-loop run fell so far behind its schedule
	// that requests could not even be queued, or were still queued when the
	// run ended (Unsent): the rate is past saturation, and the latencies are
	// a lower bound.
	Behind bool  `json:"behind,omitempty"`
	Unsent int64 `json:"unsent,omitempty"`
	// TargetCPU and HarnessCPU are the CPU time, user and system, per
	// answered request of the target's process (0: not known) and of the
	// harness's, which shares the cores: the ratio of two targets'
	// throughputs is that of their total CPU per request when both
	// saturate the cores.
	TargetCPU  time.Duration `json:"targetCpuPerRequest,omitempty"`
	HarnessCPU time.Duration `json:"harnessCpuPerRequest,omitempty"`
	// Steal is the time the hypervisor took the machine's CPUs away while
	// they had work, summed over the CPUs, during the run (its turns): a
	// stall it shows is the host's, not the target's. 0 when none or not
	// known.
	Steal time.Duration `json:"steal,omitempty"`
}

// collector gathers the outcome of a run's requests.
type collector struct {
	requests, errors, wrong, unsent atomic.Int64
	mu                              sync.Mutex
	first                           string
	hist                            *hdrhistogram.Histogram
	// workers are the workers' own histograms, kept from one segment to
	// the next (Interleave): one is about 150 KB, and hundreds of workers
	// allocating theirs anew as each segment starts would load the
	// harness, and so the latencies of both targets, just as its timing
	// begins.
	workers []*hdrhistogram.Histogram
}

// workerHistograms returns n empty histograms for a segment's workers,
// allocating only those no earlier segment did. It is called before the
// workers start.
func (c *collector) workerHistograms(n int) []*hdrhistogram.Histogram {
	for len(c.workers) < n {
		c.workers = append(c.workers, newHistogram())
	}
	return c.workers[:n]
}

func (c *collector) outcome(err error) {
	c.requests.Add(1)
	if err == nil {
		return
	}
	if errors.Is(err, errWrong) {
		c.wrong.Add(1)
	} else {
		c.errors.Add(1)
	}
	c.mu.Lock()
	if c.first == "" {
		c.first = err.Error()
	}
	c.mu.Unlock()
}

// merge adds a worker's histogram to the collector's and empties it for
// the next segment.
func (c *collector) merge(h *hdrhistogram.Histogram) {
	c.mu.Lock()
	c.hist.Merge(h)
	c.mu.Unlock()
	h.Reset()
}

// Drive runs the corpus against a target, in turn from a random-free,
// fixed order, until the run's bounds or ctx end it.
func Drive(ctx context.Context, t *Target, corpus []scale.Request, r Run) Result {
	s := newSeries()
	s.drive(ctx, t, corpus, r)
	return s.result(t.Name, r)
}

// closedLoop has workers send back to back.
func closedLoop(ctx context.Context, t *Target, workers int, take func() (*scale.Request, bool), c *collector) {
	var wg sync.WaitGroup
	for _, h := range c.workerHistograms(workers) {
		wg.Go(func() {
			defer c.merge(h)
			for ctx.Err() == nil {
				req, ok := take()
				if !ok {
					return
				}
				latency, err := t.exchange(req, time.Now())
				c.outcome(err)
				record(h, latency)
			}
		})
	}
	wg.Wait()
}

// openLoop schedules a request every 1/rate seconds and hands it to the
// workers with the time it was due; a request's latency runs from then. It
// reports whether the backlog overflowed.
func openLoop(ctx context.Context, t *Target, r Run, take func() (*scale.Request, bool), c *collector) bool {
	type job struct {
		req *scale.Request
		due time.Time
	}
	jobs := make(chan job, max(1024, int(r.Rate)))
	// Requests still queued a grace period after the schedule ends are not
	// sent: past saturation the queue would take long to drain.
	drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.Duration+max(time.Second, r.Duration/5))
	defer cancel()
	var wg sync.WaitGroup
	for _, h := range c.workerHistograms(r.Workers) {
		wg.Go(func() {
			defer c.merge(h)
			for j := range jobs {
				if drain.Err() != nil {
					c.unsent.Add(1)
					continue
				}
				latency, err := t.exchange(j.req, j.due)
				c.outcome(err)
				record(h, latency)
			}
		})
	}
	interval := time.Duration(float64(time.Second) / r.Rate)
	start := time.Now()
	behind := false
schedule:
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if due.Sub(start) >= r.Duration {
			break // by the schedule, not the context's timer, which can fire late on busy cores
		}
		if wait := time.Until(due); wait > 0 {
			select {
			case <-ctx.Done():
				break schedule
			case <-time.After(wait):
			}
		} else if ctx.Err() != nil {
			break
		}
		req, ok := take()
		if !ok {
			break
		}
		select {
		case jobs <- job{req, due}:
		default:
			behind = true
			break schedule
		}
	}
	close(jobs)
	wg.Wait()
	return behind
}
