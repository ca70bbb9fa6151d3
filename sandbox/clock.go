package sandbox

import (
	"context"
	"sync"
	"time"
)

// clock is a call's time limit that stops while the call waits for a
// person: a request of the tool's that needs an approval (toolkit.Pause)
// holds the call for as long as the person takes, and that time is not the
// tool's. Pauses nest; the clock runs again once each is over.
type clock struct {
	mu     sync.Mutex
	fire   func()
	timer  *time.Timer
	end    time.Time     // when it fires, while running
	left   time.Duration // what is left, while paused
	paused int
	fired  bool
	done   bool
}

// newClock starts a clock that calls fire once limit has run.
func newClock(limit time.Duration, fire func()) *clock {
	c := &clock{fire: fire, end: time.Now().Add(limit)}
	c.timer = time.AfterFunc(limit, c.ring)
	return c
}

func (c *clock) ring() {
	c.mu.Lock()
	if c.paused > 0 || c.done || c.fired {
		c.mu.Unlock()
		return
	}
	c.fired = true
	c.mu.Unlock()
	c.fire()
}

// pause stops the clock until the returned function is called.
func (c *clock) pause() (resume func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fired || c.done {
		return func() {}
	}
	if c.paused == 0 {
		c.timer.Stop()
		c.left = max(time.Until(c.end), 0)
	}
	c.paused++
	var once sync.Once
	return func() { once.Do(c.resume) }
}

func (c *clock) resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused--; c.paused > 0 || c.fired || c.done {
		return
	}
	c.end = time.Now().Add(c.left)
	c.timer.Reset(c.left)
}

// stop ends the clock without firing.
func (c *clock) stop() {
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
	c.timer.Stop()
}

// deadline is when the clock fires if it runs on; ok is false while it is
// paused, when no one can say.
func (c *clock) deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused > 0 {
		return time.Time{}, false
	}
	return c.end, true
}

// clockContext is a call's context: done when its parent is, or when its
// clock runs out (with Err context.DeadlineExceeded and cause
// errCallTimeout, as a context.WithTimeoutCause would say); its Deadline
// moves as the clock pauses.
type clockContext struct {
	context.Context // cancelled when the clock fires
	c               *clock
}

// withClock returns a context for a call of limit and its clock; cancel
// releases them.
func withClock(parent context.Context, limit time.Duration) (ctx context.Context, c *clock, cancel func()) {
	inner, stop := context.WithCancelCause(parent)
	c = newClock(limit, func() { stop(errCallTimeout) })
	return &clockContext{Context: inner, c: c}, c, func() { c.stop(); stop(context.Canceled) }
}

// Deadline is the earlier of the parent's and the clock's; while the clock
// is paused, the parent's alone.
func (x *clockContext) Deadline() (time.Time, bool) {
	pd, pok := x.Context.Deadline()
	d, ok := x.c.deadline()
	switch {
	case !ok:
		return pd, pok
	case pok && pd.Before(d):
		return pd, true
	}
	return d, true
}

// Err says DeadlineExceeded when the clock ran out.
func (x *clockContext) Err() error {
	err := x.Context.Err()
	if err != nil && context.Cause(x.Context) == errCallTimeout {
		return context.DeadlineExceeded
	}
	return err
}
