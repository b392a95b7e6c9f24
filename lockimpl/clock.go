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
	// Now is the client's wall clock: offset, jumps and drift all show.
	Now() time.Time
	// Mono is the client's monotonic clock (CLOCK_MONOTONIC): immune to
	// jumps and offsets, but it runs fast or slow with the drift rate, as an
	// NTP-slewed clock does. Careful algorithms (Redlock) time with it.
	Mono() time.Duration
}

// SkewClock is a wall clock with an offset, jumps and a drift rate. It keeps
// Go's monotonic reading in the times it returns, so elapsed-time
// measurements (Redlock's) stay immune to jumps, as they are on a real host
// where time.Since uses CLOCK_MONOTONIC. Drift, like NTP slew, does bend the
// monotonic reading too.
type SkewClock struct {
	mu      sync.Mutex
	origin  time.Time     // real time when drift started counting
	offset  time.Duration // accumulated offset and jumps
	drifted time.Duration // drift accumulated before origin
	drift   float64       // rate error: 0.01 runs 1% fast
	start   time.Time     // real time the clock was made (Mono's zero)
}

// NewSkewClock returns a clock offset from real time by offset.
func NewSkewClock(offset time.Duration) *SkewClock {
	now := time.Now()
	return &SkewClock{origin: now, start: now, offset: offset}
}

// driftLocked is the drift accumulated up to now.
func (c *SkewClock) driftLocked(now time.Time) time.Duration {
	return c.drifted + time.Duration(math.Round(float64(now.Sub(c.origin))*c.drift))
}

// Mono implements Clock.
func (c *SkewClock) Mono() time.Duration {
	now := time.Now()
	if c == nil {
		return time.Duration(now.UnixNano())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return now.Sub(c.start) + c.driftLocked(now)
}

// Now returns the skewed time.
func (c *SkewClock) Now() time.Time {
	now := time.Now()
	if c == nil {
		return now
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return now.Add(c.offset + c.driftLocked(now))
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
	c.drifted = c.driftLocked(now)
	c.origin = now
	c.drift = rate
}

// Offset is the current difference from real time.
func (c *SkewClock) Offset() time.Duration {
	return c.Now().Sub(time.Now())
}

// Outside is the reading of clock c that code outside the client may take
// at any time (a client process's clock pump, the harness's own logs). A
// client's Clock may stop with its client during a stop-the-world pause (a
// stopped thread reads the time only when it runs again); such a clock
// implements Outside() Clock to give the reading that does not wait.
func Outside(c Clock) Clock {
	if o, ok := c.(interface{ Outside() Clock }); ok {
		return o.Outside()
	}
	return c
}
