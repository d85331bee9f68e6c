package state

import (
	"context"
	"time"
)

// AdmitStart counts a request the server is answering, from its handler's
// start to its return, until AdmitEnd: background work (the audit) waits
// for none to be left (WaitQuiet).
func (s *Store) AdmitStart() { s.admitting.Add(1) }

// AdmitEnd ends an AdmitStart, and wakes a WaitQuiet when it was the last.
func (s *Store) AdmitEnd() {
	if s.admitting.Add(-1) == 0 && s.quietWanted.Load() {
		select {
		case s.quiet <- struct{}{}:
		default: // already woken
		}
	}
}

// WaitQuiet waits until the server answers no request, for at most bound,
// or until ctx ends; true when it found the server quiet. Callers wait one
// at a time.
func (s *Store) WaitQuiet(ctx context.Context, bound time.Duration) bool {
	if s.admitting.Load() == 0 {
		return true // the usual case between requests: no timer
	}
	s.quietMu.Lock()
	defer s.quietMu.Unlock()
	s.quietWanted.Store(true)
	defer s.quietWanted.Store(false)
	var t *time.Timer
	// A wake-up may be one an earlier wait left, or one sent as the
	// last request ended while another began: each is checked.
	for s.admitting.Load() != 0 {
		if t == nil {
			t = time.NewTimer(bound)
			defer t.Stop()
		}
		select {
		case <-s.quiet:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}
