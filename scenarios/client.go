package scenarios

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// pauser stops a client the way a stop-the-world GC pause would: its main
// loop, its sleeps, its watchdog and every Redis command it sends or
// receives wait while the pause lasts.
type pauser struct {
	mu sync.Mutex
	ch chan struct{} // non-nil while paused; closed on resume
}

func (p *pauser) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch == nil {
		p.ch = make(chan struct{})
	}
}

func (p *pauser) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch != nil {
		close(p.ch)
		p.ch = nil
	}
}

// wait blocks while the client is paused.
func (p *pauser) wait(ctx context.Context) error {
	p.mu.Lock()
	ch := p.ch
	p.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ch:
		return nil
	}
}

// sleep waits d, then for the end of any pause: a paused thread that was
// sleeping wakes only when the world restarts.
func (p *pauser) sleep(ctx context.Context, d time.Duration) error {
	if err := lockimpl.SleepCtx(ctx, d); err != nil {
		return err
	}
	return p.wait(ctx)
}

// stoppedClock is a client's clock as the lock's own threads read it: while
// the client is paused, a read waits for the world to restart, as a thread
// stopped by a GC pause or a SIGSTOP reads the time only once it runs again.
// Without it a pause entered on one goroutine of a lock (a node's reply,
// held at its command point) left the lock's other goroutines deciding
// during the pause on times they could not have read: Redlock's validity
// was computed before the pause ended, so a grant came out of a stopped
// acquire and the pause fell into the critical section instead (seen as an
// overlap of explore-late-grant × redlock, seeds 4 and 5). The waiting is
// not cut short by a context: a stopped thread has none that runs.
type stoppedClock struct {
	lockimpl.Clock
	p *pauser
}

// Now implements lockimpl.Clock.
func (c stoppedClock) Now() time.Time {
	_ = c.p.wait(context.Background())
	return c.Clock.Now()
}

// Mono implements lockimpl.Clock.
func (c stoppedClock) Mono() time.Duration {
	_ = c.p.wait(context.Background())
	return c.Clock.Mono()
}

// Outside gives the harness's reading, which a pause does not stop
// (lockimpl.Outside).
func (c stoppedClock) Outside() lockimpl.Clock { return c.Clock }

// pauseHook makes every command of a paused client wait, before it is sent
// and again before its reply is delivered.
type pauseHook struct{ p *pauser }

func (h pauseHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := h.p.wait(ctx); err != nil {
			return nil, err
		}
		return next(ctx, network, addr)
	}
}

func (h pauseHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.p.wait(ctx); err != nil {
			return err
		}
		err := next(ctx, cmd)
		if werr := h.p.wait(ctx); werr != nil && err == nil {
			err = werr
		}
		return err
	}
}

func (h pauseHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := h.p.wait(ctx); err != nil {
			return err
		}
		err := next(ctx, cmds)
		if werr := h.p.wait(ctx); werr != nil && err == nil {
			err = werr
		}
		return err
	}
}

// refuseHook makes a client's dials through a link that rejects
// connections (nemesis.Link.Refuse) fail as the kernel fails them, with
// a refused dial, before anything else of the dial runs (a failover
// client's Sentinel lookup included), and reports any dial that failed as
// a dial error: go-redis hands a command the error of the dial it could
// not make (for a failover client, maybe a Sentinel lookup's timeout),
// which says nothing of where it came from, while a command whose
// connection was never made was never sent. A lock can then tell it from
// an unknown outcome (lockimpl.NotSent).
type refuseHook struct{ link *nemesis.Link }

func (h refuseHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if h.link != nil && h.link.Refused() {
			return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
		}
		c, err := next(ctx, network, addr)
		var op *net.OpError
		if err != nil && !(errors.As(err, &op) && op.Op == "dial") {
			err = &net.OpError{Op: "dial", Net: network, Err: err}
		}
		return c, err
	}
}

func (h refuseHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h refuseHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// resource is the shared state the critical section protects: seed 001's
// counter N (read N, hold, write N+1). It lives in the harness, outside the
// system under test, so faults on the lock's servers cannot corrupt the
// measurement of what the lock let happen to it.
//
// A fenced resource is Kleppmann's storage: it sees the token of every
// access, reads included, and refuses a write whose token is not strictly
// above the last accepted write's or is below the highest token it has seen.
// Checking writes alone is not enough for a read-modify-write: a paused
// holder with token 10 could read, the next holder with token 11 read the
// same value, and the old holder's write of N+1 land before the new one's.
type resource struct {
	mu     sync.Mutex
	fenced bool
	n      map[string]int64
	wrote  map[string]int64 // fence of the last accepted write
	seen   map[string]int64 // highest fence of any access
}

func newResource(fenced bool) *resource {
	return &resource{fenced: fenced, n: map[string]int64{}, wrote: map[string]int64{}, seen: map[string]int64{}}
}

func (r *resource) read(key string, fence int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fenced && fence > r.seen[key] {
		r.seen[key] = fence
	}
	return r.n[key]
}

// write stores v; false means the fenced resource refused a stale token.
func (r *resource) write(key string, v, fence int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fenced {
		if fence <= r.wrote[key] || fence < r.seen[key] {
			return false
		}
		r.wrote[key] = fence
		r.seen[key] = fence
	}
	r.n[key] = v
	return true
}

// redisLog routes go-redis's own log lines (dial failures to servers a
// fault killed, which are expected) to the debug level of the run's logger
// instead of stderr.
type redisLog struct{}

// debugLog is where redisLog writes; set per process by Run.
var debugLog atomic.Pointer[slog.Logger]

func (redisLog) Printf(ctx context.Context, format string, v ...any) {
	if l := debugLog.Load(); l != nil {
		l.Debug("go-redis: " + fmt.Sprintf(format, v...))
	}
}

func init() { redis.SetLogger(redisLog{}) }
