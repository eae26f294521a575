package storetest

import (
	"sync"
	"time"
)

// Clock is a fake clock: it stands still until Advance moves it. The suite
// gives each test its own Clock, passes its Now to the Inbox and to the
// store under test, and advances it to make messages expire.
//
// A Clock is safe for concurrent use by multiple goroutines.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock showing t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backward if d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
