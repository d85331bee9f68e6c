package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// deadlineContext is a request's context with the API server's timeout,
// which starts no timer until something waits on it.
//
// context.WithTimeout costs every request a timer, a child entry in
// net/http's request context and about 0.6 KB, and takes the runtime's
// timer locks twice. Most requests never wait: they are decided on the
// request's goroutine, which only asks Err now and then. Err compares the
// clock with the deadline instead; the first call to Done (a wait on the
// quota ledger's API calls, say) makes the timer-backed context, and from
// then on everything is that context's.
type deadlineContext struct {
	parent context.Context
	at     time.Time
	mu     sync.Mutex
	// timed is the timer-backed context, once Done has asked for it.
	timed  atomic.Pointer[context.Context]
	cancel context.CancelFunc
	// released is set by release: the context is canceled.
	released atomic.Bool
}

// withDeadline returns parent with deadline at, or parent's own deadline if
// that is sooner, and a function that releases what it holds.
func withDeadline(parent context.Context, at time.Time) (*deadlineContext, func()) {
	if d, ok := parent.Deadline(); ok && d.Before(at) {
		at = d
	}
	c := &deadlineContext{parent: parent, at: at}
	return c, c.release
}

// Deadline returns the deadline.
func (c *deadlineContext) Deadline() (time.Time, bool) { return c.at, true }

// Done returns a channel closed at the deadline or when parent is done.
func (c *deadlineContext) Done() <-chan struct{} { return c.timedContext().Done() }

// Err is context.DeadlineExceeded from the deadline on, parent's error if
// parent is done first, context.Canceled once released, else nil.
func (c *deadlineContext) Err() error {
	if timed := c.timed.Load(); timed != nil {
		return (*timed).Err()
	}
	if c.released.Load() {
		return context.Canceled
	}
	if err := c.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.at) {
		return context.DeadlineExceeded
	}
	return nil
}

// Value is parent's value for key.
func (c *deadlineContext) Value(key any) any { return c.parent.Value(key) }

// AfterFunc runs f once the context is done, as context.AfterFunc does; a
// context derived from this one uses it rather than a goroutine of its own.
func (c *deadlineContext) AfterFunc(f func()) func() bool {
	return context.AfterFunc(c.timedContext(), f)
}

// timedContext returns the timer-backed context, making it on first use.
func (c *deadlineContext) timedContext() context.Context {
	if timed := c.timed.Load(); timed != nil {
		return *timed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if timed := c.timed.Load(); timed != nil {
		return *timed
	}
	timed, cancel := context.WithDeadline(c.parent, c.at)
	if c.released.Load() {
		cancel() // a late waiter finds it canceled, and no timer runs on
	}
	c.cancel = cancel
	c.timed.Store(&timed)
	return timed
}

// release cancels the context and stops the timer, if Done started one.
func (c *deadlineContext) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released.Store(true)
	if c.cancel != nil {
		c.cancel()
	}
}
