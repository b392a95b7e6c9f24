package lockimpl

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRedlockBackOff: the random delay's bound doubles after each split
// vote (some nodes, fewer than a majority), up to TTL/4; an attempt that
// won no node changes nothing; a win brings it back to RetryDelay.
func TestRedlockBackOff(t *testing.T) {
	l := &redlock{base: &base{o: Options{TTL: 160 * time.Millisecond, RetryDelay: 5 * time.Millisecond}},
		nodes: make([]redis.UniversalClient, 5)}
	ms := time.Millisecond
	for i, step := range []struct {
		yes  int
		want time.Duration
	}{
		{0, 5 * ms},  // first attempt: the bound starts at RetryDelay
		{2, 10 * ms}, // split
		{1, 20 * ms}, // split
		{0, 20 * ms}, // no node: unchanged
		{2, 40 * ms}, // split: TTL/4 = 40 ms
		{2, 40 * ms}, // capped
		{3, 5 * ms},  // won
		{5, 5 * ms},
	} {
		l.backOff(step.yes)
		if l.bound != step.want {
			t.Errorf("step %d (yes %d): bound %v, want %v", i, step.yes, l.bound, step.want)
		}
	}
}
