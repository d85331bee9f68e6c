package webhook

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

// closed reports whether done is closed within wait.
func closed(done <-chan struct{}, wait time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(wait):
		return false
	}
}

type ctxKey struct{}

func TestARequestsDeadlineAnswersErrWithoutATimerAndWaitsLikeContextWithDeadline(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, parent context.Context, cancelParent func())
	}{
		{"before the deadline Err is nil and no timer runs", func(t *testing.T, parent context.Context, _ func()) {
			at := time.Now().Add(time.Hour)
			c := withDeadline(parent, at)
			defer c.release()
			if err := c.Err(); err != nil {
				t.Errorf("Err = %v, want nil", err)
			}
			if d, ok := c.Deadline(); !ok || !d.Equal(at) {
				t.Errorf("Deadline = %s, %t; want %s", d, ok, at)
			}
			if c.timed.Load() != nil {
				t.Error("Err started a timer")
			}
		}},
		{"past the deadline Err says so before anything waits", func(t *testing.T, parent context.Context, _ func()) {
			c := withDeadline(parent, time.Now().Add(-time.Second))
			defer c.release()
			if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Err = %v, want the deadline exceeded", err)
			}
			if !closed(c.Done(), time.Second) {
				t.Error("Done is open past the deadline")
			}
		}},
		{"Done closes at the deadline", func(t *testing.T, parent context.Context, _ func()) {
			c := withDeadline(parent, time.Now().Add(20*time.Millisecond))
			defer c.release()
			if !closed(c.Done(), 10*time.Second) {
				t.Fatal("Done did not close after the deadline")
			}
			if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Err = %v, want the deadline exceeded", err)
			}
			if cause := context.Cause(c); !errors.Is(cause, context.DeadlineExceeded) {
				t.Errorf("Cause = %v, want Err's %v", cause, c.Err())
			}
		}},
		{"the parent's cancel shows through Err and Done", func(t *testing.T, parent context.Context, cancelParent func()) {
			c := withDeadline(parent, time.Now().Add(time.Hour))
			defer c.release()
			cancelParent()
			if err := c.Err(); !errors.Is(err, context.Canceled) {
				t.Errorf("Err = %v, want canceled", err)
			}
			if !closed(c.Done(), time.Second) {
				t.Error("Done is open after the parent was canceled")
			}
		}},
		{"Err keeps the first reason the context ended for", func(t *testing.T, parent context.Context, cancelParent func()) {
			c := withDeadline(parent, time.Now().Add(-time.Second))
			if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Err = %v, want the deadline exceeded", err)
			}
			cancelParent()
			c.release()
			<-c.Done()
			if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Err = %v after the parent's cancel and the release, want the deadline exceeded still", err)
			}
		}},
		{"a sooner deadline of the parent's wins", func(t *testing.T, parent context.Context, _ func()) {
			soon := time.Now().Add(20 * time.Millisecond)
			p, cancel := context.WithDeadline(parent, soon)
			defer cancel()
			c := withDeadline(p, time.Now().Add(time.Hour))
			defer c.release()
			if d, _ := c.Deadline(); !d.Equal(soon) {
				t.Errorf("Deadline = %s, want the parent's %s", d, soon)
			}
			if !closed(c.Done(), 10*time.Second) {
				t.Fatal("Done did not close at the parent's deadline")
			}
			if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Err = %v, want the deadline exceeded", err)
			}
		}},
		{"release cancels it, whether or not anything waited", func(t *testing.T, parent context.Context, _ func()) {
			quiet := withDeadline(parent, time.Now().Add(time.Hour))
			waited := withDeadline(parent, time.Now().Add(time.Hour))
			done := waited.Done()
			quiet.release()
			waited.release()
			for name, c := range map[string]*deadlineContext{"unwaited": quiet, "waited": waited} {
				if err := c.Err(); !errors.Is(err, context.Canceled) {
					t.Errorf("%s: Err = %v after release, want canceled", name, err)
				}
				if !closed(c.Done(), time.Second) {
					t.Errorf("%s: Done is open after release", name)
				}
			}
			if !closed(done, time.Second) {
				t.Error("the channel a waiter took before release is still open")
			}
		}},
		{"a context made from it ends at its deadline and sees its values", func(t *testing.T, parent context.Context, _ func()) {
			c := withDeadline(context.WithValue(parent, ctxKey{}, "v"), time.Now().Add(20*time.Millisecond))
			defer c.release()
			child, cancel := context.WithCancel(c)
			defer cancel()
			if !closed(child.Done(), 10*time.Second) {
				t.Fatal("the derived context did not end at the deadline")
			}
			if got := child.Value(ctxKey{}); got != "v" {
				t.Errorf("Value = %v, want the parent's", got)
			}
		}},
		{"contexts made from it hang on its timer, without a goroutine each", func(t *testing.T, parent context.Context, _ func()) {
			c := withDeadline(parent, time.Now().Add(time.Hour))
			defer c.release()
			before := runtime.NumGoroutine()
			var cancels []context.CancelFunc
			for range 100 {
				_, cancel := context.WithCancel(c)
				cancels = append(cancels, cancel)
			}
			if extra := runtime.NumGoroutine() - before; extra >= 50 {
				t.Errorf("100 derived contexts started %d goroutines", extra)
			}
			for _, cancel := range cancels {
				cancel()
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent, cancel := context.WithCancel(t.Context())
			defer cancel()
			tc.run(t, parent, cancel)
		})
	}
}

func TestARequestsDeadlineIsSafeToWaitOnAskAndReleaseAtOnce(t *testing.T) {
	for range 200 {
		c := withDeadline(t.Context(), time.Now().Add(time.Millisecond))
		var wg sync.WaitGroup
		wg.Go(func() { <-c.Done() })
		wg.Go(func() {
			for c.Err() == nil {
				runtime.Gosched()
			}
		})
		wg.Go(func() { _, cancel := context.WithCancel(c); defer cancel() })
		wg.Go(c.release)
		wg.Wait()
		if c.Err() == nil {
			t.Fatal("Err is nil after release")
		}
	}
}
