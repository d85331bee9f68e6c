package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// Pool runs topdown's policy evaluations on a fixed set of long-lived
// goroutines.
//
// topdown recurses deeply, so the goroutine that runs it grows a large
// stack. Run on every HTTP connection's goroutine, that stack is grown again
// after each garbage collection shrinks it, and under load every open
// connection holds one: with 256 requests in flight that is most of the
// server's memory. A pool bounds both to its size, and queues evaluations
// beyond it, in arrival order, instead of letting them share the CPU.
//
// The plan evaluator does not use it. Its evaluations need less than 32 KiB
// of stack (TestPlanEvaluationsFitInASmallStack), and handing each to a
// worker and waking the caller again cost 3 to 8% of the server's CPU per
// request under load, and 6 to 11% of its throughput (BENCHMARKS.md).
//
// A nil *Pool runs evaluations on the caller's goroutine.
type Pool struct {
	size int
	jobs chan *job
	stop sync.Once
	done chan struct{}
}

// job is one evaluation handed to a worker. Jobs are reused: finished
// takes one signal per run.
type job struct {
	fn       func()
	finished chan struct{}
	panicked *Panic
}

// jobs keeps jobs, and their channels, for reuse.
var jobs = sync.Pool{New: func() any { return &job{finished: make(chan struct{}, 1)} }}

// NewPool starts size workers; 0 or less is GOMAXPROCS, one per CPU the Go
// runtime uses. Close stops them.
func NewPool(size int) *Pool {
	if size <= 0 {
		size = runtime.GOMAXPROCS(0)
	}
	p := &Pool{size: size, jobs: make(chan *job), done: make(chan struct{})}
	for range size {
		go p.work()
	}
	return p
}

// Size is the number of workers.
func (p *Pool) Size() int { return p.size }

func (p *Pool) work() {
	for {
		select {
		case <-p.done:
			return
		case j := <-p.jobs:
			j.run()
		}
	}
}

func (j *job) run() {
	defer func() { j.finished <- struct{}{} }()
	defer func() {
		if p := recover(); p != nil {
			j.panicked = &Panic{Value: p, Stack: debug.Stack()}
		}
	}()
	j.fn()
}

// Panic is what Do raises when an evaluation panicked on a worker: the
// value and the worker's stack, which the caller's own stack does not show.
type Panic struct {
	Value any
	Stack []byte
}

// String is the value followed by the worker's stack.
func (p *Panic) String() string { return fmt.Sprintf("%v\n\n%s", p.Value, p.Stack) }

// Do runs fn on a worker and waits for it. It returns ctx's error, without
// running fn, when ctx ends before a worker is free. A panic in fn is raised
// again in the caller as a *Panic, so that the caller's recovery sees it.
func (p *Pool) Do(ctx context.Context, fn func()) error {
	if p == nil {
		fn()
		return nil
	}
	if ctx.Err() != nil { // a free worker must not run an ended request
		return notWaiting(ctx)
	}
	j := jobs.Get().(*job)
	j.fn = fn
	select {
	case p.jobs <- j:
	case <-ctx.Done():
		j.fn = nil
		jobs.Put(j)
		return notWaiting(ctx)
	case <-p.done:
		j.fn = nil
		jobs.Put(j)
		return errors.New("the policy evaluators are stopped")
	}
	<-j.finished
	panicked := j.panicked
	j.fn, j.panicked = nil, nil
	jobs.Put(j)
	if panicked != nil {
		panic(panicked)
	}
	return nil
}

func notWaiting(ctx context.Context) error {
	return fmt.Errorf("waiting for a policy evaluator: %w", context.Cause(ctx))
}

// Close stops the workers once their current evaluation ends; Do then
// fails. It is safe to call more than once.
func (p *Pool) Close() {
	p.stop.Do(func() { close(p.done) })
}
