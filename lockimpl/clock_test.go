package lockimpl

import (
	"testing"
	"time"
)

func TestSkewClock(t *testing.T) {
	c := NewSkewClock(2 * time.Second)
	if off := c.Now().Sub(time.Now()); off < 1900*time.Millisecond || off > 2100*time.Millisecond {
		t.Fatalf("offset %v, want ~2s", off)
	}
	m0 := c.Mono()
	c.Jump(-10 * time.Second)
	if off := c.Now().Sub(time.Now()); off > -7900*time.Millisecond {
		t.Fatalf("after jump offset %v, want ~-8s", off)
	}
	if d := c.Mono() - m0; d < 0 || d > 100*time.Millisecond {
		t.Fatalf("monotonic moved %v across a jump", d)
	}
	c.SetDrift(1.0) // runs at double speed
	w0, m1 := c.Now(), c.Mono()
	time.Sleep(50 * time.Millisecond)
	if d := c.Now().Sub(w0); d < 95*time.Millisecond {
		t.Fatalf("wall advanced %v under drift 1.0, want >= ~100ms", d)
	}
	if d := c.Mono() - m1; d < 95*time.Millisecond {
		t.Fatalf("mono advanced %v under drift 1.0, want >= ~100ms", d)
	}
}
