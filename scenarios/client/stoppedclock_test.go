package client

import (
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// A paused client's threads read their clock only once the world restarts:
// an elapsed time measured across a pause includes it (Redlock's validity
// then refuses a grant whose try was stopped past the TTL), while the
// harness's own reading (Outside) never waits.
func TestStoppedClockWaitsOutThePause(t *testing.T) {
	var p Pauser
	base := lockimpl.NewSkewClock(0)
	c := StoppedClock{base, &p}
	start := c.Mono()
	p.Pause()
	read := make(chan time.Duration, 1)
	go func() { read <- c.Mono() }()
	const stop = 60 * time.Millisecond
	time.Sleep(stop)
	select {
	case d := <-read:
		t.Fatalf("a paused client read its clock (%v) before the world restarted", d-start)
	default:
	}
	outside := lockimpl.Outside(c).Mono()
	if outside-start < stop {
		t.Fatalf("outside reading %v, want at least %v", outside-start, stop)
	}
	p.Resume()
	if elapsed := <-read - start; elapsed < stop {
		t.Fatalf("elapsed across the pause %v, want at least %v: the pause must show in it", elapsed, stop)
	}
	if _, ok := lockimpl.Outside(base).(*lockimpl.SkewClock); !ok {
		t.Fatal("Outside of a plain clock must be the clock itself")
	}
}
