package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// luaGetset is seed 000's PHP Lock class (thinkphp + predis): the SETNX /
// GET / GETSET / EXPIRE decision runs in one EVAL that returns 0 (locked),
// 1 (key vanished: retry at once), 2 (held and not expired: sleep
// LOCK_SLEEP, retry) or 3 (lost the GETSET race: retry at once), with at
// most LOCK_RETRY_MAX = 3 attempts. The scripts below are the document's,
// minus its redis.log debug lines. Quirks kept on purpose:
//   - timestamps are whole seconds (PHP time()), passed as ARGV
//     time()+LOCK_EXPIRE+1, LOCK_EXPIRE, time();
//   - the GETSET branch writes key_lock_expired + key_lock_expire + 1, i.e.
//     now + 2·(LOCK_EXPIRE+1): the expiry is counted twice;
//   - the unlock script deletes the key only when its timestamp has already
//     passed (<= now). A live lock is never released, and since EXPIRE is
//     LOCK_EXPIRE+1 the key is usually gone by then anyway: waiters wait out
//     the TTL, one holder per TTL. Release returns nil either way, as the
//     PHP unlock() returns nothing.
//
// LOCK_SLEEP is 0.3 s; note that PHP's sleep() takes whole seconds, so the
// document's sleep(0.3) actually sleeps 0. The 300 ms the author meant is
// the default here (RetryDelay overrides it, RandomDelay randomises it).
//
// Clock: the client's wall clock (Env.Clock.Now) truncated to seconds,
// because the PHP client computes every timestamp with time() and the script
// compares them with the server-side value written by other clients' clocks;
// server-side EXPIRE bounds the lock even if clocks disagree.
//
// Failpoints: lua-getset/before-lock, lua-getset/after-lock (after each
// EVAL), lua-getset/before-unlock.
//
// Options: TTL rounded up to whole seconds (LOCK_EXPIRE, default 3 s),
// RetryCount (LOCK_RETRY_MAX, 3), RetryDelay (LOCK_SLEEP, 300 ms), RandomDelay.
type luaGetset struct {
	*base
	expire int64 // LOCK_EXPIRE, seconds
}

// luaGetsetLock is getLockScript() of seed 000.
var luaGetsetLock = redis.NewScript(`
local key_lock = KEYS[1]
local key_lock_expired = tonumber(ARGV[1])
local key_lock_expire = tonumber(ARGV[2])
local time_now = tonumber(ARGV[3])
local res = redis.call('SETNX', key_lock, key_lock_expired)
if (res == 1) then
	redis.call('EXPIRE', key_lock, key_lock_expire + 1)
	return 0
end
local expired = redis.call('GET', key_lock)
if (not expired) then
	return 1
end
expired = tonumber(expired)
if (expired > time_now) then
	return 2
end
local key_lock_expired_new = key_lock_expired + key_lock_expire + 1
local expired_old = tonumber(redis.call('GETSET', key_lock, key_lock_expired_new))
if (expired_old == expired) then
	redis.call('EXPIRE', key_lock, key_lock_expire + 1)
	return 0
end
return 3
`)

// luaGetsetUnlock is getUnLockScript() of seed 000.
var luaGetsetUnlock = redis.NewScript(`
local key_lock = KEYS[1]
local time_now = tonumber(ARGV[1])
local key_lock_expired = redis.call('GET', key_lock)
if (key_lock_expired and tonumber(key_lock_expired) <= time_now) then
	redis.call('DEL', key_lock)
end
`)

func init() {
	Register(Info{
		Name:    "lua-getset",
		Points:  points("lua-getset", "before-lock", "after-lock", "before-unlock"),
		Source:  "seed 000 (PHP Lock, getLockScript/getUnLockScript)",
		Summary: "SETNX/GET/GETSET/EXPIRE in one EVAL, 3 attempts, seconds; unlock deletes only an already-expired key",
		// Seed 000: the script compares client time() stamps and takes over
		// with GETSET inside the same EVAL (atomic); EXPIRE bounds the key
		// too, but a stamp in the past lets the next client in first. The
		// unlock script deletes only an expired key. Its stamps are PHP
		// time() seconds, and the EXPIRE it sends ends the key by the
		// server's clock whatever the stamp says.
		Claims: Claims{Topology: SingleInstance, Expiry: ClientClockExpiry, Release: ExpiredOnlyRelease,
			WholeSeconds: true, ServerTTL: true},
		New: func(env Env, o Options) (Locker, error) {
			b, err := newBase("lua-getset", env, o, Options{TTL: 3 * time.Second, RetryCount: 3, RetryDelay: 300 * time.Millisecond})
			if err != nil {
				return nil, err
			}
			secs := int64((b.o.TTL + time.Second - 1) / time.Second)
			return &luaGetset{base: b, expire: secs}, nil
		},
	})
}

// Acquire implements Locker: Lock::lock().
func (l *luaGetset) Acquire(ctx context.Context, key string) (*Lease, error) {
	var lease *Lease
	p := retryPolicy{delay: l.o.RetryDelay, random: l.o.RandomDelay, attempts: l.o.RetryCount}
	err := l.retry(ctx, p, func() (attempt, error) {
		if err := l.hit(ctx, "before-lock"); err != nil {
			return 0, err
		}
		now := l.env.Clock.Now()
		t := now.Unix() // PHP time()
		res, err := luaGetsetLock.Run(ctx, l.c, []string{key}, t+l.expire+1, l.expire, t).Int64()
		if err != nil {
			return 0, unknown(l.name, "EVAL lock", err)
		}
		if err := l.hit(ctx, "after-lock"); err != nil {
			return 0, err
		}
		switch res {
		case 0:
			lease = &Lease{Key: key, Token: strconv.FormatInt(t+l.expire+1, 10), Acquired: now}
			return won, nil
		case 2:
			return retryAfterDelay, nil
		case 1, 3:
			return retryNow, nil
		}
		return 0, fmt.Errorf("lua-getset: lock script returned %d: %w", res, ErrNotAcquired)
	})
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// Release implements Locker: Lock::unlock(), which reports nothing.
func (l *luaGetset) Release(ctx context.Context, lease *Lease) error {
	if err := l.hit(ctx, "before-unlock"); err != nil {
		return err
	}
	err := luaGetsetUnlock.Run(ctx, l.c, []string{lease.Key}, l.env.Clock.Now().Unix()).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		return unknown(l.name, "EVAL unlock", err)
	}
	return nil
}
