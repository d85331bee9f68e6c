package state

import (
	"context"
	"time"
)

// AdmitStart counts a request the server is answering, from its first byte
// read to its answer written, until AdmitEnd: background work (the audit)
// waits for none to be left (WaitQuiet).
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

// WaitQuiet waits until the server answers no request, for at most most,
// or until ctx ends. It is for one caller at a time (the audit's loop).
func (s *Store) WaitQuiet(ctx context.Context, most time.Duration) {
	if s.admitting.Load() == 0 {
		return // the usual case between requests: no timer
	}
	s.quietWanted.Store(true)
	defer s.quietWanted.Store(false)
	select {
	case <-s.quiet: // a wake-up left from an earlier wait
	default:
	}
	if s.admitting.Load() == 0 { // the last ended before quietWanted was seen
		return
	}
	t := time.NewTimer(most)
	defer t.Stop()
	select {
	case <-s.quiet:
	case <-t.C:
	case <-ctx.Done():
	}
}
