// Package client holds what stands between a run's client and its
// servers, whatever the lock: the pause that stops it (Pauser, and the
// clock its threads read through it), the hooks on its connections (pauses,
// refused dials, the command points) and the relays that put the command
// points on the wire for a lock with connections of its own. The runner
// (package scenarios) gives every client these; the traffic and the
// recording of the history stay with the run.
package client

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// Pauser stops a client the way a stop-the-world GC pause would: its main
// loop, its sleeps, its watchdog and every Redis command it sends or
// receives wait while the pause lasts.
type Pauser struct {
	// Ordered, in a run in virtual time (the sim backend), makes the
	// threads a Resume releases go on about 10 µs apart, in the
	// order they stopped, instead of all at one instant in the Go
	// scheduler's order: the same seed then takes the same path.
	Ordered bool
	// Salt (Ordered) shifts each release's turns by an offset drawn from
	// it and the release's number. Without it every turn of a client
	// sat on one lattice (a pause that starts at a thread's turn and
	// lasts a whole number of milliseconds ends on it too), so a thread
	// woken by one release and a thread woken by another met at one
	// instant, and the scheduler, not the seed, decided which stopped
	// first (explore-late-grant × redlock, seeds 25, 78, 85, 99 of 100).
	Salt uint64

	mu       sync.Mutex
	cur      *release // non-nil while paused
	releases uint64   // releases so far (Ordered)
}

// release is one pause of the client: closed on resume, with the threads
// it stopped and the offset of their turns.
type release struct {
	ch      chan struct{}
	stopped int
	offset  time.Duration
}

// turnStep is how far apart an Ordered pause's threads go on.
const turnStep = 10_007 * time.Nanosecond

// Pause stops the client until Resume.
func (p *Pauser) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil {
		p.cur = &release{ch: make(chan struct{})}
	}
}

// Resume restarts a paused client (nothing if it runs).
func (p *Pauser) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil {
		return
	}
	if p.Ordered {
		p.releases++
		p.cur.offset = time.Duration(mix64(p.Salt^p.releases*0x9e3779b97f4a7c15) % uint64(turnStep))
	}
	close(p.cur.ch)
	p.cur = nil
}

// Wait blocks while the client is paused.
func (p *Pauser) Wait(ctx context.Context) error {
	for {
		p.mu.Lock()
		r := p.cur
		turn := 0
		if r != nil && p.Ordered {
			r.stopped++
			turn = r.stopped
		}
		p.mu.Unlock()
		if r == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.ch:
		}
		if turn == 0 {
			return nil
		}
		// Its turn, then a look whether the world stopped again meanwhile.
		// Turns are a prime number of ns apart, off the lattice of the
		// nodes' staggers (package topology), so no turn lands on another
		// thread's instant. The offset was set before the close: reading
		// it after the receive is ordered.
		time.Sleep(r.offset + time.Duration(turn)*turnStep)
	}
}

// mix64 is splitmix64's finalizer: a well-spread offset from a salt.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Sleep waits d, then for the end of any pause: a paused thread that was
// sleeping wakes only when the world restarts.
func (p *Pauser) Sleep(ctx context.Context, d time.Duration) error {
	if err := lockimpl.SleepCtx(ctx, d); err != nil {
		return err
	}
	return p.Wait(ctx)
}

// StoppedClock is a client's clock as the lock's own threads read it: while
// the client is paused, a read waits for the world to restart, as a thread
// stopped by a GC pause or a SIGSTOP reads the time only once it runs again.
// Without it a pause entered on one goroutine of a lock (a node's reply,
// held at its command point) left the lock's other goroutines deciding
// during the pause on times they could not have read: Redlock's validity
// was computed before the pause ended, so a grant came out of a stopped
// acquire and the pause fell into the critical section instead (seen as an
// overlap of explore-late-grant × redlock, seeds 4 and 5). The waiting is
// not cut short by a context: a stopped thread has none that runs.
type StoppedClock struct {
	lockimpl.Clock
	Pauser *Pauser
}

// Now implements lockimpl.Clock.
func (c StoppedClock) Now() time.Time {
	_ = c.Pauser.Wait(context.Background())
	return c.Clock.Now()
}

// Mono implements lockimpl.Clock.
func (c StoppedClock) Mono() time.Duration {
	_ = c.Pauser.Wait(context.Background())
	return c.Clock.Mono()
}

// Outside gives the harness's reading, which a pause does not stop
// (lockimpl.Outside).
func (c StoppedClock) Outside() lockimpl.Clock { return c.Clock }

// PauseHook makes every command of a paused client wait, before it is sent
// and again before its reply is delivered.
type PauseHook struct{ Pauser *Pauser }

// DialHook implements redis.Hook: a paused client dials once it runs.
func (h PauseHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := h.Pauser.Wait(ctx); err != nil {
			return nil, err
		}
		return next(ctx, network, addr)
	}
}

// ProcessHook implements redis.Hook.
func (h PauseHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.Pauser.Wait(ctx); err != nil {
			return err
		}
		err := next(ctx, cmd)
		if werr := h.Pauser.Wait(ctx); werr != nil && err == nil {
			err = werr
		}
		return err
	}
}

// ProcessPipelineHook implements redis.Hook.
func (h PauseHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := h.Pauser.Wait(ctx); err != nil {
			return err
		}
		err := next(ctx, cmds)
		if werr := h.Pauser.Wait(ctx); werr != nil && err == nil {
			err = werr
		}
		return err
	}
}
