// Package redislockadapter is the zoo's one adapter for
// github.com/bsm/redislock, shared by every pinned release (a Go module per
// release under examples/zoo, each with a replace to this one). It uses
// only what v0.8.2 already had (Obtain, Lock.Refresh with Options,
// Lock.Release, Lock.Token, LinearBackoff, LimitRetry, ErrNotObtained,
// ErrLockNotHeld); the client each release needs (v0.8.2 is on
// github.com/go-redis/redis/v9, later ones on github.com/redis/go-redis/v9)
// its module hands in through Release.
package redislockadapter

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// Release is one pinned release of bsm/redislock.
type Release struct {
	// Version is the release as in go.mod, e.g. "v0.9.1".
	Version string
	// Client is the library's Client over one node's go-redis v9 client
	// (redislock.New, through a shim where the release wants another
	// go-redis).
	Client func(redis.UniversalClient) *redislock.Client
}

// Info is the release on one node. Claims, from its README ("Simplified
// distributed locking implementation using Redis", pointing at
// redis.io/topics/distlock) and its source (redislock.go: SET NX PX, or the
// obtain script from v0.9.4, with a random 16-byte token; release.lua a
// compare-and-delete, refresh.lua a compare-and-pexpire; ErrLockNotHeld
// and ErrNotObtained the scripts' "not ours"): one node, expiry on the
// server, an owner-checked release, no fencing token. The same claims for
// every release. extend_checked: the key's TTL is the one the caller
// passed to Obtain or Refresh, set by the command (SET PX, refresh.lua's
// PEXPIRE) when it runs, so the caller knows it ends before its send plus
// that TTL; the adapter hands the holder that validity, less the drift
// (until), as a careful user of Obtain and Refresh would. extend_retries:
// Refresh takes the caller's Options (redislock.go 159 at v0.8.2, 161 at
// v0.9.1, 250 at v0.10.0), whose RetryStrategy "allows to customise the
// lock retry strategy" (190-192 at v0.8.2, 192-194 at v0.9.1, 290-292 at
// v0.10.0), and Extend hands it three retries; v0.8.2 and v0.9.1 never
// read it in Refresh (one luaRefresh.Run, its error returned: 160-168 and
// 162-170), v0.10.0 runs withRetry on it (256-268, a redis.Nil the only
// definite no): catalogue entry 9, PRs 83/88.
func (r Release) Info() lockimpl.Info {
	return r.info("redislock@", "", nil)
}

// ExpInfo is the release on one node with Obtain paced by the library's
// ExponentialBackoff, as its godoc describes it ("a retry time of 2**n
// milliseconds ... the recommended minimum value is not less than 16ms":
// redislock.go 261-284 at v0.8.2 and 263-286 at v0.9.1; "doubles the wait
// between retries", retry.go 55-87 at v0.10.0), from that 16 ms to a quarter of the TTL, until the wait
// timeout. Its claims add the pacing: backoff_growth 2 (2 << n ms),
// backoff_cap 0.25. v0.8.2's Obtain makes its ticker from the first
// backoff and never resets it (redislock.go 68-90: time.NewTicker once,
// no Reset), so it polls at 16 ms for ever; v0.9.1 resets it to each
// backoff (86, PR 58), as v0.10.0's withRetry does (redislock.go
// 145-148): catalogue entry 8.
func (r Release) ExpInfo() lockimpl.Info {
	exp := func(o lockimpl.Options) redislock.RetryStrategy {
		return redislock.ExponentialBackoff(16*time.Millisecond, o.TTL/4)
	}
	return r.info("redislock-exp@", ", Obtain with ExponentialBackoff", exp)
}

// info is the release's lock: backoff, when set, paces Obtain (for the
// wait timeout) instead of the README's linear retry.
func (r Release) info(prefix, summary string, backoff func(lockimpl.Options) redislock.RetryStrategy) lockimpl.Info {
	claims := lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease,
		ExtendChecked: true, ExtendRetries: true}
	if backoff != nil {
		claims.BackoffGrowth, claims.BackoffCap = 2, 0.25
	}
	return lockimpl.Info{
		Name:    prefix + r.Version,
		Summary: "bsm/redislock " + r.Version + ", one node" + summary,
		Claims:  claims,
		New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
			if o.TTL <= 0 || o.WaitTimeout <= 0 || len(env.Nodes) == 0 {
				return nil, fmt.Errorf("redislock %s: need lock.ttl, lock.wait_timeout and a node", r.Version)
			}
			s := &stamped{UniversalClient: env.Nodes[0]}
			return &locker{env: env, o: o, c: r.Client(s), s: s, backoff: backoff}, nil
		},
	}
}

type locker struct {
	env     lockimpl.Env
	o       lockimpl.Options
	c       *redislock.Client
	s       *stamped
	backoff func(lockimpl.Options) redislock.RetryStrategy
}

// driftFactor is the share of the TTL a careful holder leaves for clock
// drift (the distlock page's "minus some time ... to compensate for clock
// drift between processes"; redsync's default, 0.01).
const driftFactor = 0.01

// until is when a lease whose command was sent at start ends, less the
// drift: the library gives no validity (Lock.TTL asks the server what is
// left, a round trip later), so a careful user dates the TTL from the
// command that took or refreshed the key.
func (l *locker) until(start time.Time, ttl time.Duration) time.Duration {
	return time.Until(start.Add(ttl - time.Duration(float64(ttl)*driftFactor)))
}

// retry is the README's retry strategy, LimitRetry(LinearBackoff(d), n).
func (l *locker) retry(n int) redislock.RetryStrategy {
	return redislock.LimitRetry(redislock.LinearBackoff(max(l.o.RetryDelay, time.Millisecond)), n)
}

// Acquire is Obtain with the README's linear retry for the wait timeout,
// or the lock's backoff until it. Obtain stops at the first Redis error
// and returns it: a lost reply, whose SET may have run, is an unknown
// outcome; an error reply is a no.
func (l *locker) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	n := int(l.o.WaitTimeout / max(l.o.RetryDelay, time.Millisecond))
	// Obtain gives up at its context's deadline (ErrNotObtained); keep that
	// past the last linear retry, so running out of retries (all
	// answered) is what ends it. A backoff has no count: the deadline is
	// the wait timeout.
	strategy, wait := l.retry(n), 2*l.o.WaitTimeout+time.Second
	if l.backoff != nil {
		strategy, wait = l.backoff(l.o), l.o.WaitTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	lock, err := l.c.Obtain(cctx, key, l.o.TTL, &redislock.Options{RetryStrategy: strategy})
	switch {
	case err == nil:
		return &lockimpl.Lease{Key: key, Token: lock.Token(), Acquired: l.env.Clock.Now(),
			Validity: l.until(l.s.last(), l.o.TTL), State: lock}, nil
	case ctx.Err() == nil && (errors.Is(err, redislock.ErrNotObtained) || lockimpl.Replied(err) && !errors.Is(err, redis.Nil)):
		// Obtain returns the first error reply as it is (CLUSTERDOWN,
		// say): the server refused the command, nothing was taken.
		return nil, fmt.Errorf("%w: %v", lockimpl.ErrNotAcquired, err)
	}
	return nil, fmt.Errorf("redislock: outcome unknown: %w", err)
}

// Release runs the library's compare-and-delete. ErrLockNotHeld is the
// script's answer; a reply from Redis is definite; any other error is a
// lost reply.
func (l *locker) Release(ctx context.Context, lease *lockimpl.Lease) error {
	err := lease.State.(*redislock.Lock).Release(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redislock.ErrLockNotHeld), lockimpl.Replied(err) && !errors.Is(err, redis.Nil):
		return fmt.Errorf("%w: %v", lockimpl.ErrNotHeld, err)
	}
	return fmt.Errorf("redislock: release outcome unknown: %w", err)
}

// Extend is the library's Refresh to ttl with a retry strategy of three
// tries (what v0.10.0 honours for transient errors, PRs 83/88; earlier
// releases return the first error). ErrNotObtained is the script's "not
// ours"; a reply from Redis is definite; anything else is a lost reply.
// The validity is dated from the last try's command.
func (l *locker) Extend(ctx context.Context, lease *lockimpl.Lease, ttl time.Duration) error {
	err := lease.State.(*redislock.Lock).Refresh(ctx, ttl, &redislock.Options{RetryStrategy: l.retry(3)})
	switch {
	case err == nil:
		lease.Acquired, lease.Validity = l.env.Clock.Now(), l.until(l.s.last(), ttl)
		return nil
	case errors.Is(err, redislock.ErrNotObtained) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled),
		lockimpl.Replied(err) && !errors.Is(err, redis.Nil):
		return fmt.Errorf("%w: %v", lockimpl.ErrNotHeld, err)
	}
	return fmt.Errorf("redislock: refresh outcome unknown: %w", err)
}

// stamped is the node's client as the library gets it, noting when each
// command that can take or refresh the key is handed to go-redis: the
// start of the try that won, which the library does not report (its
// retries run inside Obtain and Refresh, and v0.8.2's ticker, never
// reset, does not start a try when its backoff says).
type stamped struct {
	redis.UniversalClient
	at atomic.Int64 // UnixNano of the last command's start
}

func (s *stamped) stamp()          { s.at.Store(time.Now().UnixNano()) }
func (s *stamped) last() time.Time { return time.Unix(0, s.at.Load()) }

func (s *stamped) SetNX(ctx context.Context, key string, value interface{}, expiration time.Duration) *redis.BoolCmd {
	s.stamp()
	return s.UniversalClient.SetNX(ctx, key, value, expiration)
}

func (s *stamped) Eval(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd {
	s.stamp()
	return s.UniversalClient.Eval(ctx, script, keys, args...)
}

func (s *stamped) EvalSha(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd {
	s.stamp()
	return s.UniversalClient.EvalSha(ctx, sha1, keys, args...)
}
