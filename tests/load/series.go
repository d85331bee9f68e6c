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
	// clock is how far each clock (startClocks) advanced over the
	// segments; unread whether some segment could not read it.
	clock  [clocks]time.Duration
	unread [clocks]bool
}

func newSeries() *series {
	return &series{c: collector{hist: newHistogram()}}
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
	meter := startClocks(t.CPU)
	start := time.Now()
	if r.Mode == OpenLoop {
		s.behind = openLoop(ctx, t, r, take, &s.c) || s.behind
	} else {
		closedLoop(ctx, t, r.Workers, take, &s.c)
	}
	s.elapsed += time.Since(start)
	spent, read := meter.spent()
	for i := range spent {
		s.clock[i] += spent[i]
		s.unread[i] = s.unread[i] || !read[i]
	}
}

// result is the series' figures, as one run of r by target.
func (s *series) result(target string, r Run) Result {
	res := Result{
		Target: target, Mode: r.Mode, Rate: r.Rate, Workers: r.Workers,
		Requests: s.c.requests.Load(), Errors: s.c.errors.Load(), Wrong: s.c.wrong.Load(), FirstError: s.c.first,
		Latency: percentiles(s.c.hist), Unsent: s.c.unsent.Load(),
	}
	res.Behind = s.behind || res.Unsent > 0
	if !s.unread[clockSteal] {
		res.Steal = s.clock[clockSteal]
	}
	answered := res.Requests - res.Errors
	if s.elapsed > 0 {
		res.Throughput = float64(answered) / s.elapsed.Seconds()
	}
	if answered > 0 {
		for i, d := range [...]*time.Duration{clockTarget: &res.TargetCPU, clockHarness: &res.HarnessCPU} {
			if !s.unread[i] {
				*d = s.clock[i] / time.Duration(answered)
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
