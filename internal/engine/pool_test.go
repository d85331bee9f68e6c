package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/internal/admission"
	"github.com/tenantguard/tenantguard/tests/scale"
)

func TestPoolRunsAtMostItsSizeAtOnce(t *testing.T) {
	for _, size := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("%d workers", size), func(t *testing.T) {
			p := NewPool(size)
			defer p.Close()
			var running, most atomic.Int32
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					err := p.Do(t.Context(), func() {
						n := running.Add(1)
						for {
							m := most.Load()
							if n <= m || most.CompareAndSwap(m, n) {
								break
							}
						}
						time.Sleep(2 * time.Millisecond)
						running.Add(-1)
					})
					if err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if got := most.Load(); got != int32(size) {
				t.Fatalf("at most %d ran at once, want %d (20 callers)", got, size)
			}
		})
	}
}

func TestPoolDo(t *testing.T) {
	busy := func() (*Pool, func()) {
		p := NewPool(1)
		started, release := make(chan struct{}), make(chan struct{})
		go func() { _ = p.Do(context.Background(), func() { close(started); <-release }) }()
		<-started
		return p, func() { close(release); p.Close() }
	}
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
			p, done := busy()
			defer done()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
			defer cancel()
			ran := false
			err := p.Do(ctx, func() { ran = true })
			return ran, err
		}, "waiting for a policy evaluator: context deadline exceeded"},
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
	if got != "broken builtin" {
		t.Fatalf("recovered %v, want the evaluation's panic", got)
	}
	// The worker survived the panic.
	ran := false
	if err := p.Do(t.Context(), func() { ran = true }); err != nil || !ran {
		t.Fatalf("after a panic: ran %v, err %v; want the worker to go on", ran, err)
	}
}

func TestConcurrentDecisionsOnAPoolMatchTheCorpus(t *testing.T) {
	pool := NewPool(2)
	defer pool.Close()
	eng, err := New(t.Context(), scaleRegistry(t, 50), Options{Pool: pool})
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
}
