package state

import (
	"context"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/internal/clusterview"
)

// waitedWithin runs WaitQuiet(ctx, bound) on s and says whether it
// returned within d.
func waitedWithin(ctx context.Context, s *Store, bound, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		s.WaitQuiet(ctx, bound)
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// waiting waits until a WaitQuiet on s waits for a wake-up.
func waiting(t *testing.T, s *Store) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !s.quietWanted.Load(); {
		if time.Now().After(deadline) {
			t.Fatal("WaitQuiet is not waiting")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWaitQuiet: the audit's wait for the server to answer no request.
func TestWaitQuiet(t *testing.T) {
	newStore := func() *Store { return New(clusterview.New("tenantguard.io/tenant"), Options{}) }
	t.Run("with no request being answered it returns at once", func(t *testing.T) {
		if !waitedWithin(t.Context(), newStore(), time.Hour, 5*time.Second) {
			t.Error("it waited")
		}
	})
	t.Run("it returns when the last request being answered ends, not before", func(t *testing.T) {
		s := newStore()
		s.AdmitStart()
		s.AdmitStart()
		done := make(chan bool)
		go func() { done <- s.WaitQuiet(t.Context(), time.Hour) }()
		waiting(t, s)
		s.AdmitEnd()
		select {
		case <-done:
			t.Fatal("it returned with a request still answered")
		case <-time.After(200 * time.Millisecond):
		}
		s.AdmitEnd()
		select {
		case quiet := <-done:
			if !quiet {
				t.Error("it said the server was not quiet")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("it still waits with no request left")
		}
	})
	t.Run("a request that never ends holds it for its bound only", func(t *testing.T) {
		s := newStore()
		s.AdmitStart()
		started := time.Now()
		if !waitedWithin(t.Context(), s, 50*time.Millisecond, 5*time.Second) {
			t.Fatal("it waited past its bound")
		}
		if took := time.Since(started); took < 50*time.Millisecond {
			t.Errorf("it returned after %s, before its bound", took)
		}
	})
	t.Run("it returns when its context ends", func(t *testing.T) {
		s := newStore()
		s.AdmitStart()
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(50*time.Millisecond, cancel)
		if !waitedWithin(ctx, s, time.Hour, 5*time.Second) {
			t.Error("it waited past its context")
		}
	})
	t.Run("a wake-up sent as the last request ended while another began does not end it", func(t *testing.T) {
		s := newStore()
		s.AdmitStart()
		done := make(chan struct{})
		go func() {
			s.WaitQuiet(t.Context(), time.Hour)
			close(done)
		}()
		waiting(t, s)
		s.quiet <- struct{}{} // the late wake-up of a request that ended
		select {
		case <-done:
			t.Fatal("it returned with a request being answered")
		case <-time.After(200 * time.Millisecond):
		}
	})
	t.Run("a wake-up left from an earlier wait does not end the next", func(t *testing.T) {
		s := newStore()
		s.quiet <- struct{}{} // an earlier wait timed out as the last request ended
		s.AdmitStart()
		if waitedWithin(t.Context(), s, time.Hour, 200*time.Millisecond) {
			t.Error("it returned with a request being answered")
		}
	})
}
