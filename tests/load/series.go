package load

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/tenantguard/tenantguard/tests/scale"
)

// series adds up the runs of one target of one shape: Drive's one run, or
// the segments Interleave drives it in. The corpus goes on where the last
// segment left it.
type series struct {
	c       collector
	next    atomic.Int64
	elapsed time.Duration
	behind  bool
	// cpu is the CPU time the target and the harness used over the
	// segments; cpuOK whether it could be read in every one of them.
	cpu   [2]time.Duration
	cpuOK [2]bool
	// steal is the machine's steal time over the segments (stealTime);
	// stealOK whether it could be read in every one of them.
	steal   time.Duration
	stealOK bool
}

func newSeries() *series {
	return &series{c: collector{hist: newHistogram()}, cpuOK: [2]bool{true, true}, stealOK: true}
}

// drive runs one segment of the series.
func (s *series) drive(ctx context.Context, t *Target, corpus []scale.Request, r Run) {
	ctx, cancel := context.WithTimeout(ctx, r.Duration)
	defer cancel()
	take := func() (*scale.Request, bool) {
		n := s.next.Add(1) - 1
		if r.MaxRequests > 0 && n >= int64(r.MaxRequests) {
			return nil, false
		}
		return &corpus[n%int64(len(corpus))], true
	}
	cpu := startCPU(t.CPU)
	steal0, stealOK := measure(stealTime)
	start := time.Now()
	if r.Mode == OpenLoop {
		s.behind = openLoop(ctx, t, r, take, &s.c) || s.behind
	} else {
		closedLoop(ctx, t, r.Workers, take, &s.c)
	}
	s.elapsed += time.Since(start)
	steal1, stealOK1 := measure(stealTime)
	s.steal += steal1 - steal0
	s.stealOK = s.stealOK && stealOK && stealOK1
	target, self, targetOK, selfOK := cpu.spent()
	s.cpu[0] += target
	s.cpu[1] += self
	s.cpuOK[0] = s.cpuOK[0] && targetOK
	s.cpuOK[1] = s.cpuOK[1] && selfOK
}

// result is the series' figures, as one run of r by target.
func (s *series) result(target string, r Run) Result {
	res := Result{
		Target: target, Mode: r.Mode, Rate: r.Rate, Workers: r.Workers,
		Requests: s.c.requests.Load(), Errors: s.c.errors.Load(), Wrong: s.c.wrong.Load(), FirstError: s.c.first,
		Latency: percentiles(s.c.hist), Unsent: s.c.unsent.Load(),
	}
	res.Behind = s.behind || res.Unsent > 0
	if s.stealOK {
		res.Steal = s.steal
	}
	answered := res.Requests - res.Errors
	if s.elapsed > 0 {
		res.Throughput = float64(answered) / s.elapsed.Seconds()
	}
	if answered > 0 {
		for i, d := range []*time.Duration{&res.TargetCPU, &res.HarnessCPU} {
			if s.cpuOK[i] {
				*d = s.cpu[i] / time.Duration(answered)
			}
		}
	}
	return res
}

// Interleave drives the targets in turns, each for its share of r, rounds
// times over, and returns one Result per target over all its segments. The
// machine's speed drifts over minutes (other guests on the host, the CPU's
// clock), and a ratio of two targets measured one after the other takes the
// drift for a difference between them; interleaved, each is measured across
// the same stretch of time. The order is reversed every other round (A B,
// B A, ...), so that a steady drift favours neither. r.MaxRequests bounds
// each target over all its segments: once it is reached, its later
// segments send nothing.
func Interleave(ctx context.Context, targets []*Target, corpus []scale.Request, r Run, rounds int) []Result {
	rounds = max(rounds, 1)
	segment := r
	segment.Duration = r.Duration / time.Duration(rounds)
	all := make([]*series, len(targets))
	for i := range all {
		all[i] = newSeries()
	}
	for round := range rounds {
		for _, i := range turns(len(targets), round) {
			if ctx.Err() == nil {
				all[i].drive(ctx, targets[i], corpus, segment)
			}
		}
	}
	out := make([]Result, len(targets))
	for i, t := range targets {
		out[i] = all[i].result(t.Name, r)
	}
	return out
}

// turns is the order of n targets in round k: as given in even rounds,
// reversed in odd ones.
func turns(n, k int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
		if k%2 == 1 {
			order[i] = n - 1 - i
		}
	}
	return order
}
