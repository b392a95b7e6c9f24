package lockimpl

import (
	"math"
	"sync"
	"time"
)

// Clock is a client's view of wall-clock time. The timestamp-valued
// algorithms (setnx-del, getset, lua-getset) compare values written by one
// client's clock against another client's clock, so a scenario must be able
// to skew each client's clock independently.
type Clock interface {
	Now() time.Time
}

// SkewClock is a wall clock with an offset, jumps and a drift rate. It keeps
// Go's monotonic reading in the times it returns, so elapsed-time
// measurements (Redlock's) stay immune to jumps, as they are on a real host
// where time.Since uses CLOCK_MONOTONIC. Drift, like NTP slew, does bend the
// monotonic reading too.
type SkewClock struct {
	mu     sync.Mutex
	origin time.Time     // real time when drift started counting
	offset time.Duration // accumulated offset and jumps
	drift  float64       // rate error: 0.01 runs 1% fast
}

// NewSkewClock returns a clock offset from real time by offset.
func NewSkewClock(offset time.Duration) *SkewClock {
	return &SkewClock{origin: time.Now(), offset: offset}
}

// Now returns the skewed time.
func (c *SkewClock) Now() time.Time {
	now := time.Now()
	if c == nil {
		return now
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.offset
	if c.drift != 0 {
		d += time.Duration(math.Round(float64(now.Sub(c.origin)) * c.drift))
	}
	return now.Add(d)
}

// Jump moves the clock by d at once (negative goes back).
func (c *SkewClock) Jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// SetDrift changes the rate error from now on; the drift accumulated so far
// is folded into the offset so the clock does not jump.
func (c *SkewClock) SetDrift(rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.offset += time.Duration(math.Round(float64(now.Sub(c.origin)) * c.drift))
	c.origin = now
	c.drift = rate
}

// Offset is the current difference from real time.
func (c *SkewClock) Offset() time.Duration {
	return c.Now().Sub(time.Now())
}
