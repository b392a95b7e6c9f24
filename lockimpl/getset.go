package lockimpl

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// getsetLock is the GETSET lock of seed 001 §四–§五 (Java RedisLock, by
// zhengcanrui) and seed 003 (Python): SETNX <now + expireMsecs + 1>; if
// held, GET the value; if that timestamp has passed, GETSET a new one and win
// only if the old value equals what was read (Java) — so of two clients that
// saw the same expired value only one wins. The loser's GETSET has still
// overwritten the winner's expiry with its own, "不过这一点非常微小的误差带来的
// 影响可以忽略不计" (§四); with skewed clocks the overwrite is not small.
// The key never expires on the server.
//
// Release variants (Options.ReleaseVariant):
//   - "java" (default): unlock() DELs the key unconditionally — the check the
//     document recommends ("持有锁的客户端在解锁之前应该再检查一次") is marked
//     "这里没有做", so a holder whose lock expired and was re-taken frees the
//     new holder's lock.
//   - "python": seed 003 deletes only "if now < lock_timeout" by its own
//     clock; once its own timeout has passed it sends nothing and Release
//     returns ErrNotHeld. Only the release differs: the acquire stays Java's
//     (millisecond values, equality check; seed 003's `now > old` test and
//     whole seconds are not modelled).
//
// Clock: the client's wall clock (Env.Clock.Now) for the value it writes and
// for every expiry comparison, read afresh for each comparison as
// System.currentTimeMillis() is; correctness therefore needs clients' clocks
// in sync, as seed 003 concedes. Retry: a fixed 100 ms sleep
// (DEFAULT_ACQUIRY_RESOLUTION_MILLIS), with the wait budget timeoutMsecs
// (10 s) decreased by 100 ms per attempt regardless of time spent, as the
// Java loop counts; RandomDelay takes the random sleep its comment proposes.
// The Java helpers swallow Redis exceptions and return false/null; here they
// surface as unknown outcomes, which the harness must see.
//
// Failpoints: getset/before-setnx, getset/after-setnx, getset/after-get,
// getset/before-getset, getset/after-getset, getset/before-release.
//
// Options: TTL (default 60 s, expireMsecs), RetryDelay (100 ms), RandomDelay,
// WaitTimeout (10 s, timeoutMsecs), ReleaseVariant (java).
type getsetLock struct {
	*base
	python bool
}

func init() {
	Register(Info{
		Name:   "getset",
		Points: points("getset", "before-setnx", "after-setnx", "after-get", "before-getset", "after-getset", "before-release"),
		Validate: func(o Options, _ int) error {
			_, err := getsetPython(o)
			return err
		},
		Source:  "seed 001 §四 §五 (Java RedisLock); seed 003 (Python)",
		Summary: "SETNX timestamp; if expired GETSET and compare; java release DELs unconditionally, python only before its own timeout",
		// §五: client-clock timestamps, taken over by one GETSET whose old
		// value is compared (only one of two racers wins). The release is
		// Java's DEL or, with release: python, seed 003's "if now <
		// lock_timeout" check.
		Claims:    getsetClaims(Options{}),
		ClaimsFor: getsetClaims,
		New: func(env Env, o Options) (Locker, error) {
			b, err := newBase("getset", env, o, Options{TTL: javaExpireMsecs, RetryDelay: javaAcquiryResolution, WaitTimeout: javaTimeoutMsecs})
			if err != nil {
				return nil, err
			}
			python, err := getsetPython(o)
			if err != nil {
				return nil, fmt.Errorf("getset: %w", err)
			}
			return &getsetLock{base: b, python: python}, nil
		},
	})
}

// getsetPython reads the release variant: java (the default) or python.
func getsetPython(o Options) (bool, error) {
	switch o.ReleaseVariant {
	case "", "java":
		return false, nil
	case "python":
		return true, nil
	}
	return false, &OptionError{"release", fmt.Sprintf("unknown release variant %q (want java or python)", o.ReleaseVariant)}
}

// Acquire implements Locker: RedisLock.lock().
func (l *getsetLock) Acquire(ctx context.Context, key string) (*Lease, error) {
	var lease *Lease
	p := retryPolicy{delay: l.o.RetryDelay, random: l.o.RandomDelay, budget: l.o.WaitTimeout}
	err := l.retry(ctx, p, func() (attempt, error) {
		if err := l.hit(ctx, "before-setnx"); err != nil {
			return 0, err
		}
		expires := expiryMillis(l.env.Clock.Now(), l.o.TTL)
		ok, err := l.c.Do(ctx, "SETNX", key, expires).Bool()
		if err != nil {
			return 0, unknown(l.name, "SETNX", err)
		}
		if err := l.hit(ctx, "after-setnx"); err != nil {
			return 0, err
		}
		if ok {
			lease = &Lease{Key: key, Token: expires, Acquired: l.env.Clock.Now()}
			return won, nil
		}
		current, err := l.c.Get(ctx, key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, unknown(l.name, "GET", err)
		}
		if err := l.hit(ctx, "after-get"); err != nil {
			return 0, err
		}
		if err != nil { // nil reply: currentValueStr == null, wait and retry
			return retryAfterDelay, nil
		}
		cur, perr := parseMillis(current)
		if perr != nil {
			return 0, errors.Join(ErrNotAcquired, perr) // Long.parseLong throws
		}
		if cur >= l.env.Clock.Now().UnixMilli() {
			return retryAfterDelay, nil
		}
		// Expired by our clock: GETSET our expiry, win if nobody beat us.
		if err := l.hit(ctx, "before-getset"); err != nil {
			return 0, err
		}
		old, err := l.c.GetSet(ctx, key, expires).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, unknown(l.name, "GETSET", err)
		}
		if err := l.hit(ctx, "after-getset"); err != nil {
			return 0, err
		}
		if err == nil && old == current {
			lease = &Lease{Key: key, Token: expires, Acquired: l.env.Clock.Now()}
			return won, nil
		}
		// Beaten (or the key vanished and our GETSET just created it):
		// our value stays written either way.
		return retryAfterDelay, nil
	})
	if err != nil {
		return nil, err
	}
	return lease, nil
}

func getsetClaims(o Options) Claims {
	c := Claims{Topology: SingleInstance, Expiry: ClientClockExpiry, Release: UnconditionalRelease}
	if o.ReleaseVariant == "python" {
		c.Release = TimeCheckedRelease
	}
	return c
}

// Release implements Locker: RedisLock.unlock() (java) or seed 003's
// guarded delete (python).
func (l *getsetLock) Release(ctx context.Context, lease *Lease) error {
	if err := l.hit(ctx, "before-release"); err != nil {
		return err
	}
	if l.python {
		timeout, err := parseMillis(lease.Token)
		if err != nil {
			return fmt.Errorf("getset: lease token %q: %w", lease.Token, err)
		}
		if now := l.env.Clock.Now().UnixMilli(); now >= timeout {
			return fmt.Errorf("getset: own timeout passed %d ms ago, not deleting: %w", now-timeout, ErrNotHeld)
		}
	}
	return l.delRelease(ctx, lease.Key)
}
