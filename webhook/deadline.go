package webhook

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// deadlineContext is a request's context with the API server's timeout,
// which starts no timer until something waits on it.
//
// context.WithTimeout costs every request a timer, an entry in net/http's
// request context and about 0.6 KB, and takes the runtime's timer locks
// twice. The plan evaluator never waits: it decides on the request's
// goroutine and only asks Err now and then, which compares the clock with
// the deadline. The first call to Done (a wait on the quota ledger's API
// calls, say, or the topdown evaluator's, which always waits) makes the
// timer-backed context; from then on Done, Value and so the contexts made
// from this one are that context's.
type deadlineContext struct {
	parent context.Context
	at     time.Time
	// mu guards making timed and cancel.
	mu sync.Mutex
	// timed is the timer-backed context, once Done has asked for it.
	timed  atomic.Pointer[context.Context]
	cancel context.CancelFunc
	// err is the first error Err gave, which it then keeps giving.
	err atomic.Pointer[error]
}

// withDeadline returns parent with deadline at, or parent's own deadline if
// that is sooner. Its release must be called once the request is answered.
func withDeadline(parent context.Context, at time.Time) *deadlineContext {
	if d, ok := parent.Deadline(); ok && d.Before(at) {
		at = d
	}
	return &deadlineContext{parent: parent, at: at}
}

// Deadline returns the deadline.
func (c *deadlineContext) Deadline() (time.Time, bool) { return c.at, true }

// Done returns a channel closed at the deadline, when parent is done, or on
// release.
func (c *deadlineContext) Done() <-chan struct{} { return c.timedContext().Done() }

// Err is nil until the context ends, then why it ended, for good:
// context.DeadlineExceeded from the deadline on, parent's error if parent
// was done first, context.Canceled once released before the deadline.
func (c *deadlineContext) Err() error {
	if err := c.err.Load(); err != nil {
		return *err
	}
	var err error
	if timed := c.timed.Load(); timed != nil {
		err = (*timed).Err()
	} else if err = c.parent.Err(); err == nil && !time.Now().Before(c.at) {
		err = context.DeadlineExceeded
	}
	if err == nil {
		return nil
	}
	c.err.CompareAndSwap(nil, &err)
	return *c.err.Load()
}

// Value is the timer-backed context's value for key once there is one,
// parent's before. context.WithCancel and the like find their parent
// through it, and so hang themselves on the timer-backed context.
func (c *deadlineContext) Value(key any) any {
	if timed := c.timed.Load(); timed != nil {
		return (*timed).Value(key)
	}
	return c.parent.Value(key)
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
	if c.err.Load() != nil {
		cancel() // ended already, released perhaps: no timer runs on
	}
	c.cancel = cancel
	c.timed.Store(&timed)
	return timed
}

// release ends the context, as the cancel function of context.WithDeadline
// does, and stops the timer if Done started one.
func (c *deadlineContext) release() {
	err := context.Canceled
	if !time.Now().Before(c.at) {
		err = context.DeadlineExceeded
	}
	c.err.CompareAndSwap(nil, &err)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		c.cancel()
	}
}
