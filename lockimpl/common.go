package lockimpl

// Mechanism shared by the algorithms: option defaults, tokens, timestamp
// values, the classification of errors into definite and unknown outcomes,
// the retry loop, per-node timeouts and the renewal watchdog. The steps of
// each algorithm stay in its own file; only plumbing lives here, so a reader
// can compare an algorithm file line by line with its seed document.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Seed 001 §五 (Java RedisLock) numbers, reused by every algorithm of the
// SETNX family since the seeds give no other.
const (
	javaAcquiryResolution = 100 * time.Millisecond // DEFAULT_ACQUIRY_RESOLUTION_MILLIS
	javaTimeoutMsecs      = 10 * time.Second       // timeoutMsecs: lock wait timeout
	javaExpireMsecs       = 60 * time.Second       // expireMsecs: lock hold timeout
)

// base is what every Locker carries: its environment, its resolved options,
// its connection (node 0 for the single-node algorithms) and the failpoint
// prefix. The prefix is a field, not a constant, so fenced can reuse
// set-nx-px's steps under its own name.
type base struct {
	env  Env
	o    Options
	c    redis.UniversalClient
	name string

	mu   sync.Mutex
	dogs map[*watchdog]struct{}
}

// newBase validates the environment and the options and fills the
// algorithm's defaults (zero fields of def are left zero).
func newBase(name string, env Env, o, def Options) (*base, error) {
	if len(env.Nodes) == 0 {
		return nil, fmt.Errorf("%s: env has no Redis nodes", name)
	}
	if env.Clock == nil {
		return nil, fmt.Errorf("%s: env has no clock", name)
	}
	if env.Rand == nil {
		return nil, fmt.Errorf("%s: env has no random source", name)
	}
	if o.TTL < 0 || o.RetryCount < 0 || o.RetryDelay < 0 || o.WaitTimeout < 0 || o.Nodes < 0 || o.NodeTimeout < 0 {
		return nil, fmt.Errorf("%s: negative option in %+v", name, o)
	}
	if o.TTL == 0 {
		o.TTL = def.TTL
	}
	if o.RetryCount == 0 {
		o.RetryCount = def.RetryCount
	}
	if o.RetryDelay == 0 {
		o.RetryDelay = def.RetryDelay
	}
	if o.WaitTimeout == 0 {
		o.WaitTimeout = def.WaitTimeout
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = def.NodeTimeout
	}
	return &base{env: env, o: o, c: env.Nodes[0], name: name, dogs: map[*watchdog]struct{}{}}, nil
}

// hit passes the failpoint "<name>/<step>".
func (b *base) hit(ctx context.Context, step string) error {
	return b.env.hit(ctx, b.name+"/"+step)
}

// token is a value unique to this client and request (seed 002 uses a UUID),
// drawn from the client's seeded source so runs replay.
func (b *base) token() string {
	return fmt.Sprintf("%d-%016x%016x", b.env.Client, b.env.Rand.Uint64(), b.env.Rand.Uint64())
}

// Close stops every watchdog this client runs. A crashed client's goroutines
// die with it, so the runner calls Close (io.Closer) when it crashes a client;
// renewals must not outlive their process.
func (b *base) Close() error {
	b.mu.Lock()
	dogs := b.dogs
	b.dogs = map[*watchdog]struct{}{}
	b.mu.Unlock()
	for w := range dogs {
		w.stop()
	}
	return nil
}

// expiryMillis is seed 001's lock value "current Unix time + lock timeout + 1"
// in milliseconds (System.currentTimeMillis() + expireMsecs + 1).
func expiryMillis(now time.Time, ttl time.Duration) string {
	return strconv.FormatInt(now.UnixMilli()+ttl.Milliseconds()+1, 10)
}

// parseMillis reads a timestamp value written by expiryMillis (Java's
// Long.parseLong).
func parseMillis(v string) (int64, error) {
	return strconv.ParseInt(v, 10, 64)
}

// Replied reports whether err is a definite answer from the server: no
// error, redis.Nil (a nil reply), or an error reply (WRONGTYPE, READONLY,
// NOSCRIPT, ...), none of which leave a command half-done. Anything else — a
// timeout, a reset, a cancelled context — may hide a command that ran.
//
// It is the test a Locker needs to honour the error contract: return
// ErrNotAcquired (or ErrNotHeld) only when every command that mattered
// Replied; otherwise return the error itself, which the harness records as
// an unknown outcome. An adapter for a library that folds both into one
// error ("not obtained") can test the library's wrapped cause with it.
func Replied(err error) bool {
	if err == nil {
		return true
	}
	var re redis.Error
	return errors.As(err, &re)
}

// NotSent reports whether err proves the command never reached a server:
// the connection could not be made or no pooled connection was free. A
// quorum lock can count such a node as a definite "no" when deciding whether
// a failed attempt may still hold a majority (lockstorm's redlock does).
func NotSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) || errors.Is(err, redis.ErrClosed)
}

// unknown wraps a command error whose outcome the caller cannot know.
func unknown(impl, cmd string, err error) error {
	return fmt.Errorf("%s: %s: outcome unknown: %w", impl, cmd, err)
}

// delRelease is seed 001's unlock: DEL the key whoever holds it. A reply of 0
// is the server saying the key was gone, so the lock was not ours to release.
func (b *base) delRelease(ctx context.Context, key string) error {
	n, err := b.c.Del(ctx, key).Result()
	if err != nil {
		return unknown(b.name, "DEL", err)
	}
	if n == 0 {
		return fmt.Errorf("%s: DEL %s deleted nothing: %w", b.name, key, ErrNotHeld)
	}
	return nil
}

// attempt is what one try of an acquire loop concluded.
type attempt int

const (
	// won: the lock is held.
	won attempt = iota
	// retryAfterDelay: held by someone else; sleep, then try again.
	retryAfterDelay
	// retryNow: the state changed under us (seed 000 results 1 and 3); try
	// again at once, still counting the attempt.
	retryNow
)

// retryPolicy is how an acquire loop waits. The seeds use three budgets,
// so all three exist: attempts (PHP LOCK_RETRY_MAX), a nominal budget decreased by
// the delay per failure whatever the real time spent (Java's
// `timeout -= DEFAULT_ACQUIRY_RESOLUTION_MILLIS`), and a real wait
// measured on the monotonic clock (immune to wall-clock jumps).
type retryPolicy struct {
	delay    time.Duration
	random   bool // uniform in [0, 2·delay): the fairness remedy of seed 001 §五's comment
	attempts int
	budget   time.Duration
	wait     time.Duration
}

// retry runs try until it wins, fails, or the policy's budget runs out
// (ErrNotAcquired). Every sleep goes through the client's sleeper, so a
// paused client stops retrying.
func (b *base) retry(ctx context.Context, p retryPolicy, try func() (attempt, error)) error {
	start := b.env.Clock.Mono()
	budget := p.budget
	for n := 1; ; n++ {
		a, err := try()
		if err != nil {
			return err
		}
		if a == won {
			return nil
		}
		if p.attempts > 0 && n >= p.attempts {
			return fmt.Errorf("%s: %w after %d attempts", b.name, ErrNotAcquired, n)
		}
		if p.budget > 0 {
			if budget -= p.delay; budget < 0 {
				return fmt.Errorf("%s: %w: wait timeout %v spent in %d attempts", b.name, ErrNotAcquired, p.budget, n)
			}
		}
		d := p.delay
		if p.random && d > 0 {
			d = time.Duration(b.env.Rand.Int64N(int64(2 * d)))
		}
		if p.wait > 0 {
			left := p.wait - (b.env.Clock.Mono() - start)
			if left <= 0 {
				return fmt.Errorf("%s: %w within %v (%d attempts)", b.name, ErrNotAcquired, p.wait, n)
			}
			d = min(d, left)
		}
		if a == retryNow {
			continue
		}
		if err := b.env.sleep(ctx, d); err != nil {
			return err
		}
	}
}

// withTimeout runs f but stops waiting for it after d: the bound is the
// caller's wait, not the command's life. f runs under ctx, so its command
// keeps the client's own timeout (the connection's read timeout) and a late
// reply is read and dropped, its outcome unknown to the caller, on a
// connection that stays usable. Cancelling the command at d instead would
// close the connection at every expiry (go-redis cannot resynchronise a
// connection with a reply in flight): on a loaded machine whose scheduling
// delays pass d now and then, a client loses connection after connection,
// and one that cannot dial again (cut from the Sentinels that name its
// masters) loses the masters for good.
func withTimeout(ctx context.Context, d time.Duration, f func(ctx context.Context) error) error {
	t := time.NewTimer(d)
	defer t.Stop()
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("no reply within %v: %w", d, context.DeadlineExceeded)
	}
}

// watchdog renews a held lock every TTL/3 (seed 002: every 10 s for a 30 s
// key) until stopped, and closes lost when it learns the lock is gone.
type watchdog struct {
	cancel context.CancelFunc
	done   chan struct{}
	lost   chan struct{}
}

// watchdogOffset puts a watchdog's renewals off the whole-millisecond
// lattice its client's own timers keep from the same grant (an extend
// every extend_every, a hold of whole milliseconds): two timers of one
// client due at one instant fire in the scheduler's order, which the sim
// backend cannot replay (extend-blips × set-nx-px-wd, seed 1: the client's
// extend and the watchdog's renewal invoked at one instant, numbered and
// answered in either order). 7.919 µs is nothing to a 30 s lease.
const watchdogOffset = 7919 * time.Nanosecond

// watch starts a watchdog. renew reports whether the server still had the
// lock as ours. A definite "no" closes lost at once; so does failing to
// confirm the lock for a whole TTL (renewals erroring), because by then the
// key has expired unless a renewal we cannot see landed. Sleeps go through the
// client's sleeper, so pausing the client pauses its watchdog, as a GC pause
// does in seed 002 §常规方案缺陷.
func (b *base) watch(key, token string, ttl time.Duration, renew func(ctx context.Context) (bool, error)) *watchdog {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchdog{cancel: cancel, done: make(chan struct{}), lost: make(chan struct{})}
	b.mu.Lock()
	b.dogs[w] = struct{}{}
	b.mu.Unlock()
	go func() {
		defer close(w.done)
		confirmed := b.env.Clock.Mono()
		for wait := ttl/3 + watchdogOffset; ; wait = ttl / 3 {
			if b.env.sleep(ctx, wait) != nil {
				return
			}
			if b.hit(ctx, "before-renew") != nil {
				return // crashed (or stopped): a dead process renews nothing
			}
			ours, err := b.recordRenewal(ctx, key, token, renew)
			if ctx.Err() != nil {
				return
			}
			switch {
			case err == nil && ours:
				confirmed = b.env.Clock.Mono()
			case err == nil || b.env.Clock.Mono()-confirmed >= ttl:
				close(w.lost)
				return
			}
		}
	}()
	return w
}

// recordRenewal runs one renewal, reported to Env.Renewal when set. A
// renewal cut short by the watchdog's stop is reported too (unknown): its
// command may have been sent.
func (b *base) recordRenewal(ctx context.Context, key, token string, renew func(ctx context.Context) (bool, error)) (bool, error) {
	if b.env.Renewal == nil {
		return renew(ctx)
	}
	done := b.env.Renewal(key, token)
	ours, err := renew(ctx)
	switch {
	case err != nil:
		done(err)
	case !ours:
		done(fmt.Errorf("%s: renewal of %s: not ours: %w", b.name, key, ErrNotHeld))
	default:
		done(nil)
	}
	return ours, err
}

// unwatch stops w (nil is fine) and waits until its goroutine has exited,
// so no renewal can follow the release.
func (b *base) unwatch(w *watchdog) {
	if w == nil {
		return
	}
	b.mu.Lock()
	delete(b.dogs, w)
	b.mu.Unlock()
	w.stop()
}

func (w *watchdog) stop() {
	w.cancel()
	<-w.done
}

// Scripts shared by the token-valued algorithms (set-nx-px, fenced, redlock):
// the compare-and-delete of the Redis distlock page that seed 002 §常规方案
// uses for release ("为了避免线程释放不属于自己的锁,我们还需要进行value的比对"),
// and the matching compare-and-pexpire for renewal.
var (
	compareAndDelete = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("del", KEYS[1])
else
	return 0
end`)
	compareAndPexpire = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("pexpire", KEYS[1], ARGV[2])
else
	return 0
end`)
)
