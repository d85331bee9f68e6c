package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/tests/scale"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

func TestPoolRunsAtMostItsSizeAtOnce(t *testing.T) {
	for _, size := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("%d workers", size), func(t *testing.T) {
			p := NewPool(size)
			defer p.Close()
			var running, most atomic.Int32
			release := make(chan struct{})
			var wg sync.WaitGroup
			for range 3 * size {
				wg.Go(func() {
					err := p.Do(t.Context(), func() {
						n := running.Add(1)
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						<-release
						running.Add(-1)
					})
					if err != nil {
						t.Error(err)
					}
				})
			}
			// Every worker takes a job; the other callers wait.
			deadline := time.Now().Add(5 * time.Second)
			for running.Load() < int32(size) && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
			busy := running.Load()
			close(release)
			wg.Wait()
			if busy != int32(size) || most.Load() != int32(size) {
				t.Fatalf("%d ran at once with %d callers waiting, at most %d; want %d", busy, 2*size, most.Load(), size)
			}
		})
	}
}

// busyPool is a pool of one worker held until the returned function runs.
func busyPool() (*Pool, func()) {
	p := NewPool(1)
	started, release := make(chan struct{}), make(chan struct{})
	go func() { _ = p.Do(context.Background(), func() { close(started); <-release }) }()
	<-started
	return p, func() { close(release); p.Close() }
}

func TestPoolDo(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T) (ran bool, err error)
		want string // "" for no error
	}{
		{"a free worker runs the evaluation and Do waits for it", func(t *testing.T) (bool, error) {
			p := NewPool(1)
			defer p.Close()
			ran := false
			err := p.Do(t.Context(), func() { time.Sleep(time.Millisecond); ran = true })
			return ran, err
		}, ""},
		{"a nil pool runs the evaluation on the caller's goroutine", func(t *testing.T) (bool, error) {
			var p *Pool
			ran := false
			err := p.Do(t.Context(), func() { ran = true })
			return ran, err
		}, ""},
		{"a request whose time runs out while every worker is busy is not evaluated", func(t *testing.T) (bool, error) {
			p, done := busyPool()
			defer done()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
			defer cancel()
			ran := false
			err := p.Do(ctx, func() { ran = true })
			return ran, err
		}, "waiting for a policy evaluator: context deadline exceeded"},
		{"a request whose time has run out is not evaluated even by a free worker", func(t *testing.T) (bool, error) {
			p := NewPool(1)
			defer p.Close()
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			ran := false
			err := p.Do(ctx, func() { ran = true })
			return ran, err
		}, "waiting for a policy evaluator: context canceled"},
		{"a closed pool refuses evaluations", func(t *testing.T) (bool, error) {
			p := NewPool(1)
			p.Close()
			p.Close()
			ran := false
			err := p.Do(t.Context(), func() { ran = true })
			return ran, err
		}, "the policy evaluators are stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran, err := tt.run(t)
			switch {
			case tt.want == "" && (err != nil || !ran):
				t.Fatalf("ran %v, err %v; want it run without error", ran, err)
			case tt.want != "" && (err == nil || err.Error() != tt.want || ran):
				t.Fatalf("ran %v, err %v; want %q and not run", ran, err, tt.want)
			}
		})
	}
}

func TestAPanicInAnEvaluationReachesTheCaller(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	got := func() (p2 any) {
		defer func() { p2 = recover() }()
		_ = p.Do(t.Context(), func() { panic("broken builtin") })
		return nil
	}()
	pp, ok := got.(*Panic)
	if !ok || pp.Value != "broken builtin" || !strings.Contains(pp.String(), "pool_test.go") {
		t.Fatalf("recovered %v, want the evaluation's panic with the worker's stack", got)
	}
	// The worker survived the panic.
	ran := false
	if err := p.Do(t.Context(), func() { ran = true }); err != nil || !ran {
		t.Fatalf("after a panic: ran %v, err %v; want the worker to go on", ran, err)
	}
}

func TestConcurrentDecisionsMatchTheCorpusWithEitherEvaluator(t *testing.T) {
	for _, evaluator := range []string{EvaluatorPlan, EvaluatorTopdown} {
		t.Run(evaluator, func(t *testing.T) {
			pool := NewPool(2)
			defer pool.Close()
			eng, err := New(t.Context(), scaleRegistry(t, 50), Options{Pool: pool, PolicyOptions: PolicyOptions{Evaluator: evaluator}})
			if err != nil {
				t.Fatal(err)
			}
			view := scaleView(50)
			corpus := scale.Corpus(50, 100)
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Go(func() {
					for i := w; i < len(corpus); i += 8 {
						req, err := admission.Decode(corpus[i].Body)
						if err != nil {
							t.Error(err)
							return
						}
						d, err := eng.Validate(t.Context(), req, view)
						if err != nil || d.Allowed != corpus[i].Allowed {
							t.Errorf("%s #%d: decision %+v, %v; want allowed %v", corpus[i].Kind, i, d, err, corpus[i].Allowed)
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

func TestTopdownWaitsForThePoolButTheSelfCheckDoesNot(t *testing.T) {
	pool, done := busyPool()
	defer done()
	eng, err := New(t.Context(), scaleRegistry(t, 5), Options{Pool: pool, PolicyOptions: PolicyOptions{Evaluator: EvaluatorTopdown}})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Check(t.Context()); err != nil {
		t.Fatalf("self-check with every evaluator busy: %v; want it run on the caller's goroutine", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err = eng.Validate(ctx, podCreate(t, 1, podSpec), scaleView(5))
	if err == nil || !strings.Contains(err.Error(), "waiting for a policy evaluator") {
		t.Fatalf("decision with every evaluator busy: %v; want it to wait for the pool and time out", err)
	}
}

func TestThePlanEvaluatorDecidesOnTheCallersGoroutine(t *testing.T) {
	pool, done := busyPool()
	defer done()
	eng, err := New(t.Context(), scaleRegistry(t, 5), Options{Pool: pool, PolicyOptions: PolicyOptions{Evaluator: EvaluatorPlan}})
	if err != nil {
		t.Fatal(err)
	}
	// Through the busy pool, the decision would wait and time out.
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	d, err := eng.Validate(ctx, podCreate(t, 1, podSpec), scaleView(5))
	if err != nil || !d.Allowed {
		t.Fatalf("decision with every pool worker busy: %+v, %v; want the plan evaluator to decide without the pool", d, err)
	}
	ended, end := context.WithCancel(t.Context())
	end()
	_, err = eng.Validate(ended, podCreate(t, 1, podSpec), scaleView(5))
	if err == nil || !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "not evaluating") {
		t.Fatalf("decision of an ended request: %v; want it refused unevaluated, with the context's error", err)
	}
	if err := eng.Check(ended); err != nil {
		t.Fatalf("self-check with an ended context: %v; want the policy checked all the same", err)
	}
}

func TestAPoolOfSizeZeroHasOneWorkerPerCPU(t *testing.T) {
	for _, size := range []int{0, -1} {
		p := NewPool(size)
		p.Close()
		if p.Size() != runtime.GOMAXPROCS(0) {
			t.Fatalf("NewPool(%d) has %d workers, want GOMAXPROCS (%d)", size, p.Size(), runtime.GOMAXPROCS(0))
		}
	}
	if p := NewPool(3); p.Size() != 3 {
		t.Fatalf("NewPool(3) has %d workers", p.Size())
	} else {
		p.Close()
	}
}

// maxPlanStack bounds the stack a plan evaluation may grow: the reason the
// plan evaluator runs on the caller's goroutine, without the pool.
const maxPlanStack = 32 << 10

// stackChild names the evaluator the child process of
// TestPlanEvaluationsFitInASmallStack runs the corpus with.
const stackChild = "TENANTGUARD_TEST_STACK"

func TestPlanEvaluationsFitInASmallStack(t *testing.T) {
	if evaluator := os.Getenv(stackChild); evaluator != "" {
		evaluateUnderStackLimit(t, evaluator)
		return
	}
	// In a child process: going over the limit crashes the program.
	child := func(evaluator string) ([]byte, error) {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestPlanEvaluationsFitInASmallStack$")
		// Goroutines start at the smallest stack, not at the average size
		// the runtime has seen, so that the limit bounds every evaluation.
		cmd.Env = append(os.Environ(), stackChild+"="+evaluator, "GODEBUG=adaptivestackstart=0")
		return cmd.CombinedOutput()
	}
	if out, err := child(EvaluatorPlan); err != nil {
		t.Fatalf("plan evaluations of the corpus with a %d KiB stack limit: %v\n%.2000s", maxPlanStack>>10, err, out)
	}
	// topdown, which recurses deeply, shows that the limit bites.
	if out, err := child(EvaluatorTopdown); err == nil || !strings.Contains(string(out), "stack exceeds") {
		t.Fatalf("topdown evaluations with a %d KiB stack limit: %v; want them over it\n%.2000s", maxPlanStack>>10, err, out)
	}
}

// evaluateUnderStackLimit reviews every shape of the corpus on a new
// goroutine, started after the limit is set so that its stack starts small.
func evaluateUnderStackLimit(t *testing.T, evaluator string) {
	eng, err := New(t.Context(), scaleRegistry(t, 50), Options{PolicyOptions: PolicyOptions{Evaluator: evaluator}})
	if err != nil {
		t.Fatal(err)
	}
	view := scaleView(50)
	corpus := scale.Corpus(50, 20) // every shape of the corpus
	reqs := make([]*admission.Request, len(corpus))
	for i, c := range corpus {
		if reqs[i], err = admission.Decode(c.Body); err != nil {
			t.Fatal(err)
		}
	}
	debug.SetMaxStack(maxPlanStack)
	done := make(chan error)
	go func() {
		for i, req := range reqs {
			if _, err := eng.Review(t.Context(), req, view); err != nil {
				done <- fmt.Errorf("%s: %w", corpus[i].Kind, err)
				return
			}
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
