package messages

import (
	"sync"
	"time"
)

// Clock hands out message timestamps (Unix milliseconds) that are unique and
// strictly increasing, even when several are asked for within one
// millisecond or the wall clock steps back: Next returns the wall-clock time
// unless that is not greater than the last value returned, in which case it
// returns the last value plus one.
//
// The zero value is ready to use and reads time.Now. A Clock must not be
// copied after first use. All methods are safe for concurrent use. Use one
// Clock per session, for both histories, and seed it with [Clock.Observe]
// when a history is loaded so new messages sort after the old ones.
type Clock struct {
	mu   sync.Mutex
	last int64
	now  func() time.Time
}

// NewClock returns a Clock that reads now instead of time.Now (for tests).
// A nil now means time.Now.
func NewClock(now func() time.Time) *Clock {
	return &Clock{now: now}
}

// Next returns a timestamp greater than every one returned or observed before.
func (c *Clock) Next() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	t := now().UnixMilli()
	if t <= c.last {
		t = c.last + 1
	}
	c.last = t
	return t
}

// Observe records ts as used, so that later calls to Next return values
// greater than it. Timestamps not greater than the last one are ignored.
func (c *Clock) Observe(ts int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ts > c.last {
		c.last = ts
	}
}

// ObserveHistory observes every timestamp of both histories.
func (c *Clock) ObserveHistory(ui []UIMessage, api []APIMessage) {
	var hi int64
	for _, m := range ui {
		hi = max(hi, m.TS)
	}
	for _, m := range api {
		hi = max(hi, m.TS)
	}
	c.Observe(hi)
}

// Last returns the last timestamp returned or observed (0 if none).
func (c *Clock) Last() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}
