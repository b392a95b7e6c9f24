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
// every release.
func (r Release) Info() lockimpl.Info {
	return lockimpl.Info{
		Name:    "redislock@" + r.Version,
		Summary: "bsm/redislock " + r.Version + ", one node",
		Claims:  lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease},
		New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
			if o.TTL <= 0 || o.WaitTimeout <= 0 || len(env.Nodes) == 0 {
				return nil, fmt.Errorf("redislock %s: need lock.ttl, lock.wait_timeout and a node", r.Version)
			}
			return &locker{env: env, o: o, c: r.Client(env.Nodes[0])}, nil
		},
	}
}

type locker struct {
	env lockimpl.Env
	o   lockimpl.Options
	c   *redislock.Client
}

// tries is the README's retry strategy, LimitRetry(LinearBackoff(d), n),
// that also records when the next try starts (after its backoff): the
// start a careful user dates the TTL from, as the library gives no
// validity (Lock.TTL asks the server for what is left, a round trip
// later).
type tries struct {
	s     redislock.RetryStrategy
	start time.Time
}

func (t *tries) NextBackoff() time.Duration {
	d := t.s.NextBackoff()
	t.start = time.Now().Add(d)
	return d
}

func (l *locker) retry(n int) *tries {
	d := max(l.o.RetryDelay, time.Millisecond)
	return &tries{s: redislock.LimitRetry(redislock.LinearBackoff(d), n), start: time.Now()}
}

// Acquire is Obtain with the README's linear retry for the wait timeout.
// Obtain stops at the first Redis error and returns it: a lost reply,
// whose SET may have run, so the outcome is unknown unless Redis answered.
func (l *locker) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	t := l.retry(int(l.o.WaitTimeout / max(l.o.RetryDelay, time.Millisecond)))
	// Obtain gives up at its context's deadline; keep that past the last
	// retry, so running out of retries (all answered) is what ends it.
	cctx, cancel := context.WithTimeout(ctx, 2*l.o.WaitTimeout+time.Second)
	defer cancel()
	lock, err := l.c.Obtain(cctx, key, l.o.TTL, &redislock.Options{RetryStrategy: t})
	switch {
	case err == nil:
		return &lockimpl.Lease{Key: key, Token: lock.Token(), Acquired: l.env.Clock.Now(),
			Validity: time.Until(t.start.Add(l.o.TTL)), State: lock}, nil
	case errors.Is(err, redislock.ErrNotObtained) && ctx.Err() == nil:
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
// The validity is dated from the last try's start.
func (l *locker) Extend(ctx context.Context, lease *lockimpl.Lease, ttl time.Duration) error {
	t := l.retry(3)
	err := lease.State.(*redislock.Lock).Refresh(ctx, ttl, &redislock.Options{RetryStrategy: t})
	switch {
	case err == nil:
		lease.Acquired, lease.Validity = l.env.Clock.Now(), time.Until(t.start.Add(ttl))
		return nil
	case errors.Is(err, redislock.ErrNotObtained) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled),
		lockimpl.Replied(err) && !errors.Is(err, redis.Nil):
		return fmt.Errorf("%w: %v", lockimpl.ErrNotHeld, err)
	}
	return fmt.Errorf("redislock: refresh outcome unknown: %w", err)
}
