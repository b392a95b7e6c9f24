package planted

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// The signal-list lock of python-redis-lock (ionelmc/python-redis-lock,
// src/redis_lock/__init__.py): SET key id NX EX expire, in whole seconds
// as its expire is; a waiter whose SET failed blocks on BLPOP of the
// lock's signal list, with the expire as its timeout (acquire without a
// timeout); the release script, if the key is still the caller's, deletes
// it and pushes one element onto the signal list, waking one waiter. A
// lock that expires sends no signal: its waiters wake at their timeout.
//
// The correct one is v3.4.0's (aaf1697): the script also gives the signal
// list a short expiry (signal_expire, 1000 ms by default), so a waiter
// that reaches BLPOP just after a release still finds the signal.

// signalBug is a bug of the signal-list lock; the zero value is the
// correct lock.
type signalBug string

// catalogue 19 (python-redis-lock issue 71, v3.2.0 c1afd64 to v3.3.x,
// fixed in v3.4.0): release deletes the signal list in a separate command
// after the script, so a waiter whose SET failed just before the release
// reaches BLPOP after the signal is gone, and sleeps to its timeout (the
// expire) while the lock stands free.
const bugSignalDeleted signalBug = "signal-deleted"

// catalogue 23 (Spring RedisLockRegistry GH-3700, fixed by PR #3702 in
// 5.5.x): a waiter woken by the release's signal that then loses the race
// for the key (another client's SET came first) gives up at once, its
// wait time not spent. Spring's PUB_SUB_LOCK wakes its waiters by a
// message on a channel; here the signal list wakes one, and the race is
// lost to a client that arrives between the release and the woken
// waiter's SET.
const bugGiveUpAfterSignal signalBug = "give-up-after-signal"

// signalExpire is python-redis-lock's default signal_expire (ms).
const signalExpire = 1000

// unlockSignal is v3.4.0's UNLOCK_SCRIPT: 1 when the key is not the
// caller's, 0 when released.
var unlockSignal = redis.NewScript(`if redis.call("get", KEYS[1]) ~= ARGV[1] then
    return 1
else
    redis.call("del", KEYS[2])
    redis.call("lpush", KEYS[2], 1)
    redis.call("pexpire", KEYS[2], ARGV[2])
    redis.call("del", KEYS[1])
    return 0
end`)

// signalLock is one client of the signal-list lock.
type signalLock struct {
	env lockimpl.Env
	o   lockimpl.Options
	c   redis.UniversalClient
	bug signalBug
	seq int
}

// signalClaims are singleClaims counted in whole seconds, as
// python-redis-lock's expire is (the battery stretches a scenario whose
// TTL is a few seconds or less), without the grant check: its acquire
// takes whatever its SET NX EX answered, however late.
var signalClaims = func() lockimpl.Claims {
	c := singleClaims
	c.WholeSeconds = true
	c.GrantChecked, c.GrantMonotonic = false, false
	c.WaitsOut = true // acquire(timeout=...) tries again until its timeout
	return c
}()

// seconds is d in whole seconds, rounded up, at least one.
func seconds(d time.Duration) time.Duration {
	return max(time.Second, (d + time.Second - 1).Truncate(time.Second))
}

func signalInfo(name, summary string, bug signalBug) lockimpl.Info {
	return lockimpl.Info{
		Name:    name,
		Summary: summary,
		Claims:  signalClaims,
		New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
			if o.TTL <= 0 || o.WaitTimeout <= 0 || len(env.Nodes) == 0 {
				return nil, fmt.Errorf("%s: need lock.ttl, lock.wait_timeout and a node", name)
			}
			return &signalLock{env: env, o: o, c: env.Nodes[0], bug: bug}, nil
		},
	}
}

// signalKey is the lock's signal list (python-redis-lock's
// "lock-signal:" + name).
func signalKey(key string) string { return "lock-signal:" + key }

// Acquire is acquire(blocking=True): SET NX PX, and on a refusal BLPOP on
// the signal list for the expire (python-redis-lock's blpop_timeout when
// no timeout is given), then SET again; the spec's wait_timeout ends it.
func (l *signalLock) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	l.seq++
	tok := fmt.Sprintf("c%d-%d-%x", l.env.Client, l.seq, l.env.Rand.Uint64())
	start := l.env.Clock.Mono()
	signalled := false
	for {
		err := l.c.Do(ctx, "SET", key, tok, "NX", "EX", int64(seconds(l.o.TTL)/time.Second)).Err()
		if err == nil {
			return &lockimpl.Lease{Key: key, Token: tok, Acquired: l.env.Clock.Now()}, nil
		}
		if !errors.Is(err, redis.Nil) {
			return nil, &lockimpl.AttemptError{Token: tok, Err: fmt.Errorf("planted signal: acquire: outcome unknown: %w", err)}
		}
		if l.env.Clock.Mono()-start >= l.o.WaitTimeout || signalled && l.bug == bugGiveUpAfterSignal {
			return nil, &lockimpl.AttemptError{Token: tok, Err: lockimpl.ErrNotAcquired} // planted (the second): woken, lost the race, gave up
		}
		wait := seconds(min(l.o.TTL, l.o.WaitTimeout-(l.env.Clock.Mono()-start)))
		err = l.c.BLPop(ctx, wait, signalKey(key)).Err()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, &lockimpl.AttemptError{Token: tok, Err: fmt.Errorf("planted signal: acquire: BLPOP: outcome unknown: %w", err)}
		}
		signalled = err == nil // a release's signal woke it, not the timeout
	}
}

// Release runs the unlock script: a definite no when the key is not the
// caller's.
func (l *signalLock) Release(ctx context.Context, lease *lockimpl.Lease) error {
	n, err := unlockSignal.Run(ctx, l.c, []string{lease.Key, signalKey(lease.Key)}, lease.Token, signalExpire).Int64()
	if err == nil && l.bug == bugSignalDeleted {
		err = l.c.Del(ctx, signalKey(lease.Key)).Err() // planted: the signal deleted after the script
	}
	switch {
	case err != nil:
		return fmt.Errorf("planted signal: release: outcome unknown: %w", err)
	case n == 1:
		return lockimpl.ErrNotHeld
	}
	return nil
}

// The signal-list locks: the correct original (python-redis-lock v3.4.0)
// and catalogue 19's variation.
var (
	Signal = signalInfo("planted-signal", "correct: SET NX PX, waiters on a BLPOP signal list (python-redis-lock 3.4.0)", "")
	// SignalDeleted is catalogue 19 (python-redis-lock #71).
	SignalDeleted = signalInfo("planted-signal-deleted", "release: the signal list deleted after the script (python-redis-lock #71)", bugSignalDeleted)
	// SignalGivesUp is catalogue 23 (Spring GH-3700).
	SignalGivesUp = signalInfo("planted-signal-gives-up", "acquire: a waiter woken by the signal gives up when it loses the race (Spring GH-3700)", bugGiveUpAfterSignal)
)
