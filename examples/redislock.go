package examples

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// Redislock is github.com/bsm/redislock.
//
// Claims, from its README and source ("simplified distributed locking
// implementation using Redis", redis.io/topics/distlock): one node, SET NX
// PX inside its obtain script, a compare-and-delete release script; no
// fencing token; Refresh exists but nothing calls it by itself: the battery
// calls it (Extend) where a scenario sets workload.extend_every.
var Redislock = lockimpl.Info{
	Name:    "bsm-redislock",
	Summary: "bsm/redislock",
	Claims:  lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease},
	New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
		if o.TTL <= 0 || o.WaitTimeout <= 0 {
			return nil, fmt.Errorf("redislock: the spec must set lock.ttl and lock.wait_timeout")
		}
		return &bsmLock{env: env, o: o, c: redislock.New(env.Nodes[0])}, nil
	},
}

type bsmLock struct {
	env lockimpl.Env
	o   lockimpl.Options
	c   *redislock.Client
}

// Acquire is one Obtain with a linear retry for the wait timeout. Obtain
// stops at the first Redis error and returns it: a lost reply, whose
// script may have run, so the outcome is unknown unless Redis answered.
func (l *bsmLock) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	delay := max(l.o.RetryDelay, time.Millisecond)
	retry := redislock.LimitRetry(redislock.LinearBackoff(delay), int(l.o.WaitTimeout/delay))
	// Obtain gives up at its context's deadline; keep that past the last
	// retry, so running out of retries (all answered) is what ends it.
	cctx, cancel := context.WithTimeout(ctx, 2*l.o.WaitTimeout+time.Second)
	defer cancel()
	lock, err := l.c.Obtain(cctx, key, l.o.TTL, &redislock.Options{RetryStrategy: retry})
	switch {
	case err == nil:
		return &lockimpl.Lease{Key: key, Token: lock.Token(), Acquired: l.env.Clock.Now(), State: lock}, nil
	case errors.Is(err, redislock.ErrNotObtained):
		return nil, fmt.Errorf("%w: %v", lockimpl.ErrNotAcquired, err)
	}
	return nil, fmt.Errorf("redislock: outcome unknown: %w", err)
}

// Release runs the library's compare-and-delete. ErrLockNotHeld is the
// script's answer (or a nil lock); any other error is a lost reply.
func (l *bsmLock) Release(ctx context.Context, lease *lockimpl.Lease) error {
	err := lease.State.(*redislock.Lock).Release(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redislock.ErrLockNotHeld):
		return fmt.Errorf("%w: %v", lockimpl.ErrNotHeld, err)
	case lockimpl.Replied(err):
		// The server refused the script (NOREPLICAS, READONLY): nothing
		// was deleted, but the key may well be ours; that is the server's
		// no, passed through as it is, not the lock's "not held".
		return fmt.Errorf("redislock: release refused: %w", err)
	}
	return fmt.Errorf("redislock: release outcome unknown: %w", err)
}

// Extend is the library's Refresh: a compare-and-pexpire of the lock's key
// to ttl. ErrNotObtained is the script's "not ours"; a reply from Redis is
// definite; anything else is a lost reply.
func (l *bsmLock) Extend(ctx context.Context, lease *lockimpl.Lease, ttl time.Duration) error {
	err := lease.State.(*redislock.Lock).Refresh(ctx, ttl, nil)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redislock.ErrNotObtained):
		return fmt.Errorf("%w: %v", lockimpl.ErrNotHeld, err)
	case lockimpl.Replied(err):
		return fmt.Errorf("redislock: refresh refused: %w", err) // the server's no, as in Release
	}
	return fmt.Errorf("redislock: refresh outcome unknown: %w", err)
}
