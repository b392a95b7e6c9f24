package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// setNXPX is seed 002's 常规方案 (and the single-instance lock of the Redis
// distlock page): SET key <unique token> NX PX ttl in one command, so there is
// no window without an expiry, and release by a Lua compare-and-delete so a
// client never deletes a lock that is no longer its own. Options add the
// document's two extras:
//
//   - Reentrant: a per-client, per-key hold count (the ThreadLocal LockData
//     count of seed 002): re-acquiring only increments it, and only the last
//     Release talks to Redis;
//
//   - Watchdog: a renewal task every TTL/3 (seed 002: every 10 s for a 30 s
//     key) running a compare-and-pexpire script; when it finds the key gone
//     or someone else's it closes Lease.Lost (seed 002 interrupts the thread).
//
//   - WaitReplicas (not in seed 002: the regular scheme plus the guard users
//     add against its failover flaw): after the SET, WAIT WaitReplicas
//     ReplicaTimeout; fewer acknowledgements than asked and the lock is not
//     trusted: the key is given back (compare-and-delete) and the attempt
//     retries after the delay. WAIT only says the replicas received the
//     write; it does not make the failover pick one of them, nor stop a
//     partitioned master from granting to its side.
//
// What the document says still breaks it: a pause longer than the TTL (the
// watchdog is paused too: its sleeps go through the client's sleeper) and a
// failover that loses the key (asynchronous replication).
//
// Clock: none for safety: expiry is the server's PX. The wait timeout is
// measured on the client's monotonic clock (Env.Clock.Mono), so a wall-clock
// jump cannot lengthen or cut a wait.
//
// Failpoints: set-nx-px/before-set, set-nx-px/after-set,
// set-nx-px/before-release, set-nx-px/before-renew (in the watchdog, before
// each renewal), set-nx-px/after-wait (WaitReplicas only, after WAIT's reply).
//
// Options: TTL (default 30 s, seed 002), RetryDelay (100 ms), RandomDelay,
// WaitTimeout (10 s), Reentrant, Watchdog, WaitReplicas, ReplicaTimeout
// (100 ms).
type setNXPX struct {
	*base

	mu    sync.Mutex
	holds map[string]*nxpxHold // reentrant holds by key
}

// nxpxHold is one held lock: the LockData of seed 002.
type nxpxHold struct {
	lease *Lease
	count int
	dog   *watchdog
}

func init() {
	Register(Info{
		Name:     "set-nx-px",
		Points:   points("set-nx-px", append(setNXPXSteps, "after-wait")...),
		Validate: validateSetNXPX,
		Source:   "seed 002 常规方案 (SET NX PX + Lua compare-and-delete, LockData reentrancy, renewal)",
		Summary:  "SET key token NX PX ttl, compare-and-delete release; optional reentrancy and watchdog renewal",
		New: func(env Env, o Options) (Locker, error) {
			return newSetNXPX("set-nx-px", env, o)
		},
		Claims:    setNXPXClaims(Options{}),
		ClaimsFor: setNXPXClaims,
	})
}

// setNXPXSteps are set-nx-px's failpoint steps, which fenced shares.
var setNXPXSteps = []string{"before-set", "after-set", "before-release", "before-renew"}

// validateSetNXPX refuses a watchdog that cannot renew: it renews every
// TTL/3, in whole milliseconds.
func validateSetNXPX(o Options, _ int) error {
	ttl := o.TTL
	if ttl == 0 {
		ttl = 30 * time.Second
	}
	if o.Watchdog && ttl < 3*time.Millisecond {
		return &OptionError{"ttl", fmt.Sprintf("%v too short for the watchdog, which renews every TTL/3 (at least 3ms)", ttl)}
	}
	return nil
}

// setNXPXClaims: seed 002 常规方案: one master, TTL in the SET itself, a Lua
// compare-and-delete release, renewal when the watchdog is on, replica
// acknowledgement with WaitReplicas.
func setNXPXClaims(o Options) Claims {
	return Claims{Topology: SingleInstance, Expiry: ServerExpiry, Release: OwnerCheckedRelease, Renewal: o.Watchdog,
		ReplicaAck: o.WaitReplicas > 0}
}

// newSetNXPX builds the lock under a failpoint prefix, so fenced can run the
// same steps as "fenced/...".
func newSetNXPX(name string, env Env, o Options) (*setNXPX, error) {
	b, err := newBase(name, env, o, Options{TTL: 30 * time.Second, RetryDelay: javaAcquiryResolution, WaitTimeout: javaTimeoutMsecs})
	if err != nil {
		return nil, err
	}
	if b.o.WaitReplicas > 0 && b.o.ReplicaTimeout == 0 {
		b.o.ReplicaTimeout = 100 * time.Millisecond
	}
	if err := validateSetNXPX(b.o, len(env.Nodes)); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &setNXPX{base: b, holds: map[string]*nxpxHold{}}, nil
}

// Acquire implements Locker: tryLock of seed 002.
func (l *setNXPX) Acquire(ctx context.Context, key string) (*Lease, error) {
	if l.o.Reentrant {
		l.mu.Lock()
		h := l.holds[key]
		if h != nil {
			h.count++ // lockData.count++
		}
		l.mu.Unlock()
		if h != nil {
			return h.lease, nil
		}
	}
	tok := l.token()
	var lease *Lease
	p := retryPolicy{delay: l.o.RetryDelay, random: l.o.RandomDelay, wait: l.o.WaitTimeout}
	err := l.retry(ctx, p, func() (attempt, error) {
		if err := l.hit(ctx, "before-set"); err != nil {
			return 0, err
		}
		now := l.env.Clock.Now()
		var c scripterDo = l.c
		if cc, ok := l.c.(*redis.ClusterClient); ok && l.o.WaitReplicas > 0 {
			conn, err := pinned(ctx, cc, key)
			if err != nil {
				return 0, unknown(l.name, "SET NX PX", err)
			}
			defer conn.Close()
			c = conn
		}
		err := c.Do(ctx, "SET", key, tok, "NX", "PX", l.o.TTL.Milliseconds()).Err()
		if redirected(err) {
			// The key's master changed under the pinned connection (a
			// failover, a slot moved): the SET did not run. The client
			// learns the new slot map, and the attempt retries.
			if cc, ok := l.c.(*redis.ClusterClient); ok {
				cc.ReloadState(ctx)
			}
			return retryAfterDelay, nil
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, unknown(l.name, "SET NX PX", err)
		}
		if herr := l.hit(ctx, "after-set"); herr != nil {
			return 0, herr
		}
		if err != nil { // nil reply: the key exists
			return retryAfterDelay, nil
		}
		if l.o.WaitReplicas > 0 {
			if trusted, err := l.waitReplicas(ctx, c, key, tok); err != nil || !trusted {
				return retryAfterDelay, err
			}
		}
		lease = &Lease{Key: key, Token: tok, Acquired: now}
		return won, nil
	})
	if err != nil {
		return nil, err
	}
	h := &nxpxHold{lease: lease, count: 1}
	lease.State = h
	if l.o.Watchdog {
		h.dog = l.watch(key, tok, l.o.TTL, func(ctx context.Context) (bool, error) {
			n, err := compareAndPexpire.Run(ctx, l.c, []string{key}, tok, l.o.TTL.Milliseconds()).Int64()
			return n == 1, err
		})
		lease.Lost = h.dog.lost
	}
	if l.o.Reentrant {
		l.mu.Lock()
		l.holds[key] = h
		l.mu.Unlock()
	}
	return lease, nil
}

// waitReplicas asks the master to wait for WaitReplicas acknowledgements of
// the SET. Too few and the lock is given back, since its holder must not
// rely on a write a failover could lose. A lost reply is an unknown outcome:
// the key is set on the master either way.
func (l *setNXPX) waitReplicas(ctx context.Context, c scripterDo, key, tok string) (bool, error) {
	n, err := c.Do(ctx, "WAIT", l.o.WaitReplicas, l.o.ReplicaTimeout.Milliseconds()).Int64()
	if err != nil {
		return false, unknown(l.name, "WAIT", err)
	}
	if herr := l.hit(ctx, "after-wait"); herr != nil {
		return false, herr
	}
	if n >= int64(l.o.WaitReplicas) {
		return true, nil
	}
	if err := compareAndDelete.Run(ctx, c, []string{key}, tok).Err(); err != nil && !Replied(err) {
		return false, unknown(l.name, "EVAL compare-and-delete after WAIT", err)
	}
	return false, nil
}

// scripterDo is what the acquire sends through: the lock's client, or one
// of its connections (pinned).
type scripterDo interface {
	redis.Scripter
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// pinned is one connection to key's master, for the SET and the WAIT that
// must share it on a cluster client: WAIT counts the acknowledgements of
// its own connection's writes, and a cluster client sends the keyless
// WAIT wherever it routes keyless commands (it came back at once with
// every replica of another master). Close gives the connection back to
// the pool. A plain client keeps sending both through its pool, which
// reuses the connection it just released.
func pinned(ctx context.Context, cc *redis.ClusterClient, key string) (*redis.Conn, error) {
	node, err := cc.MasterForKey(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("master of %s: %w", key, err)
	}
	return node.Conn(), nil
}

// redirected says the server refused a command for a key it does not
// serve (MOVED, or ASK during a slot's migration).
func redirected(err error) bool {
	if err == nil || err == redis.Nil {
		// The refusal every contended try meets; errors.As on it compares
		// the error's methods by name, some 2,000 instructions a try.
		return false
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
}

// Release implements Locker: unlock of seed 002. With reentrancy only the
// last release reaches Redis. The watchdog stops first: the holder has
// decided to let go, and a renewal must not follow the delete.
func (l *setNXPX) Release(ctx context.Context, lease *Lease) error {
	h, _ := lease.State.(*nxpxHold)
	if h != nil && l.o.Reentrant {
		l.mu.Lock()
		if h.count > 1 {
			h.count--
			l.mu.Unlock()
			return nil
		}
		h.count = 0
		if l.holds[lease.Key] == h {
			delete(l.holds, lease.Key)
		}
		l.mu.Unlock()
	}
	if h != nil {
		l.unwatch(h.dog)
	}
	if err := l.hit(ctx, "before-release"); err != nil {
		return err
	}
	n, err := compareAndDelete.Run(ctx, l.c, []string{lease.Key}, lease.Token).Int64()
	if err != nil {
		return unknown(l.name, "EVAL compare-and-delete", err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %s is not ours: %w", l.name, lease.Key, ErrNotHeld)
	}
	return nil
}

// abandon forgets a lease without sending anything: its renewal stops and
// the key is left to expire. A wrapper (fenced) calls it when it fails after
// the lock was taken, since its caller will not know it holds the lock.
func (l *setNXPX) abandon(lease *Lease) {
	h, _ := lease.State.(*nxpxHold)
	if h == nil {
		return
	}
	l.mu.Lock()
	if l.holds[lease.Key] == h {
		delete(l.holds, lease.Key)
	}
	l.mu.Unlock()
	l.unwatch(h.dog)
}

// Extend implements Extender: the compare-and-pexpire the watchdog uses,
// once, on the caller's demand (redsync's Extend, bsm/redislock's Refresh).
func (l *setNXPX) Extend(ctx context.Context, lease *Lease, ttl time.Duration) error {
	n, err := compareAndPexpire.Run(ctx, l.c, []string{lease.Key}, lease.Token, ttl.Milliseconds()).Int64()
	if err != nil {
		return unknown(l.name, "EVAL compare-and-pexpire", err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %s is not ours: %w", l.name, lease.Key, ErrNotHeld)
	}
	return nil
}
