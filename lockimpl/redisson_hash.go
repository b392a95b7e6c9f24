package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redissonHash is the Redisson lock whose Lua scripts seed 002 (RedLock方案,
// 代码实现) quotes: the lock is a hash owner → hold count. Acquire: if the key
// does not exist, HSET owner 1 and PEXPIRE; if the owner's field exists,
// HINCRBY it and PEXPIRE (reentrant by nature, the count lives on the server);
// otherwise return the key's PTTL. Unlock: HINCRBY -1 and PEXPIRE while the
// count stays positive, else DEL and PUBLISH an unlock message on the lock's
// channel (KEYS[2]). A waiter SUBSCRIBEs to that channel and sleeps until a
// message or the returned PTTL, whichever comes first, then tries again —
// Redisson's wake-up instead of polling.
//
// Quirk of the unlock script kept as written: a missing key PUBLISHes and
// returns 1, so releasing a lock that already expired "succeeds" (Release
// returns nil); a key held by another owner returns nil → ErrNotHeld.
//
// The owner id is one random id per client (Redisson: UUID:threadId), the
// lease token. Watchdog (optional) is Redisson's lockWatchdogTimeout renewal
// (hexists → pexpire every TTL/3), which the seed does not quote.
//
// Clock: none for safety (server PEXPIRE). The wait timeout is measured on
// the monotonic clock (Env.Clock.Mono).
//
// Failpoints: redisson-hash/before-lock, redisson-hash/after-lock,
// redisson-hash/before-subscribe, redisson-hash/before-wait,
// redisson-hash/before-unlock, redisson-hash/before-renew.
//
// Options: TTL (default 30 s, Redisson's lockWatchdogTimeout), WaitTimeout
// (10 s), RetryDelay (100 ms: the wait when PTTL is -1, a key without expiry),
// Watchdog.
type redissonHash struct {
	*base
	owner string

	mu   sync.Mutex
	dogs map[string]*watchdog // per key, while this client holds it
}

// redissonLock is the acquire script quoted in seed 002.
var redissonLock = redis.NewScript(`
if (redis.call('exists', KEYS[1]) == 0) then
	redis.call('hset', KEYS[1], ARGV[2], 1);
	redis.call('pexpire', KEYS[1], ARGV[1]);
	return nil;
end;
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
	redis.call('hincrby', KEYS[1], ARGV[2], 1);
	redis.call('pexpire', KEYS[1], ARGV[1]);
	return nil;
end;
return redis.call('pttl', KEYS[1]);
`)

// redissonUnlock is the release script quoted in seed 002.
var redissonUnlock = redis.NewScript(`
if (redis.call('exists', KEYS[1]) == 0) then
	redis.call('publish', KEYS[2], ARGV[1]);
	return 1;
end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
	return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
	redis.call('pexpire', KEYS[1], ARGV[2]);
	return 0;
else
	redis.call('del', KEYS[1]);
	redis.call('publish', KEYS[2], ARGV[1]);
	return 1;
end;
return nil;
`)

// redissonRenew is Redisson's renewExpiration script (not in the seed).
var redissonRenew = redis.NewScript(`
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
	redis.call('pexpire', KEYS[1], ARGV[1]);
	return 1;
end;
return 0;
`)

// redissonClaims are set-nx-px's, and the unlock script's first branch: a
// key that no longer exists is "unlocked" (return 1), so a release after
// the lock expired reports ok (seed 002's script; Redisson's unlock then
// succeeds where later versions throw IllegalMonitorStateException). The
// lock script's second branch re-enters a key whose hash already holds the
// owner's field (reentrant). Its waiters SUBSCRIBE to the channel the
// unlock script PUBLISHes on and sleep until its message or the PTTL the
// lock script returned (notified wait), as Redisson's do.
func redissonClaims(o Options) Claims {
	c := setNXPXClaims(o)
	c.AbsentReleaseOK = true
	c.Reentrant = true
	c.NotifiedWait = true
	return c
}

// redissonUnlockMessage is LockPubSub.UNLOCK_MESSAGE.
const redissonUnlockMessage = 0

func init() {
	Register(Info{
		Name:    "redisson-hash",
		Points:  points("redisson-hash", "before-lock", "after-lock", "before-subscribe", "before-wait", "before-unlock", "before-renew"),
		Source:  "seed 002 RedLock方案 代码实现 (Redisson lock/unlock Lua)",
		Summary: "hash owner→count with HINCRBY/PEXPIRE Lua, PUBLISH on unlock, waiters subscribe",
		// The same claims as set-nx-px: the acquire script sets the hash and
		// its PEXPIRE together; the unlock script deletes only when the
		// owner's field is there; renewal when the watchdog is on.
		Claims:    redissonClaims(Options{}),
		ClaimsFor: redissonClaims,
		New: func(env Env, o Options) (Locker, error) {
			b, err := newBase("redisson-hash", env, o, Options{TTL: 30 * time.Second, RetryDelay: javaAcquiryResolution, WaitTimeout: javaTimeoutMsecs})
			if err != nil {
				return nil, err
			}
			l := &redissonHash{base: b, dogs: map[string]*watchdog{}}
			l.owner = l.token() + ":1"
			return l, nil
		},
	})
}

// channel is Redisson's per-lock channel name.
func (l *redissonHash) channel(key string) string {
	return "redisson_lock__channel:{" + key + "}"
}

// Acquire implements Locker: RedissonLock.tryLock(waitTime).
func (l *redissonHash) Acquire(ctx context.Context, key string) (*Lease, error) {
	start := l.env.Clock.Mono()
	var (
		ps   *redis.PubSub
		msgs <-chan *redis.Message
	)
	defer func() {
		if ps != nil {
			_ = ps.Close()
		}
	}()
	for {
		if err := l.hit(ctx, "before-lock"); err != nil {
			return nil, err
		}
		now := l.env.Clock.Now()
		pttl, err := redissonLock.Run(ctx, l.c, []string{key}, l.o.TTL.Milliseconds(), l.owner).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, unknown(l.name, "EVAL lock", err)
		}
		if herr := l.hit(ctx, "after-lock"); herr != nil {
			return nil, herr
		}
		if err != nil { // nil reply: acquired (first time or re-entered)
			lease := &Lease{Key: key, Token: l.owner, Acquired: now}
			if w := l.startWatchdog(key); w != nil {
				lease.Lost = w.lost
			}
			return lease, nil
		}
		if ps == nil {
			// Subscribe, then try once more before waiting: an unlock between
			// our attempt and the subscription would otherwise go unheard.
			if err := l.hit(ctx, "before-subscribe"); err != nil {
				return nil, err
			}
			ps = l.c.Subscribe(ctx, l.channel(key))
			if _, err := ps.Receive(ctx); err != nil {
				return nil, fmt.Errorf("%s: subscribe: %w", l.name, errors.Join(ErrNotAcquired, err))
			}
			msgs = ps.Channel()
			continue
		}
		left := l.o.WaitTimeout - (l.env.Clock.Mono() - start)
		if left <= 0 {
			return nil, fmt.Errorf("%s: %w within %v", l.name, ErrNotAcquired, l.o.WaitTimeout)
		}
		d := time.Duration(pttl) * time.Millisecond
		if pttl < 0 {
			d = l.o.RetryDelay
		}
		if err := l.hit(ctx, "before-wait"); err != nil {
			return nil, err
		}
		t := time.NewTimer(min(d, left))
		select {
		case <-msgs:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
		// A zero sleep is the client's pause checkpoint: a paused client must
		// not wake up and take the lock.
		if err := l.env.sleep(ctx, 0); err != nil {
			return nil, err
		}
	}
}

// startWatchdog renews key while this client holds it, if asked to; a
// re-entry shares the running watchdog, unless that one has already ended.
func (l *redissonHash) startWatchdog(key string) *watchdog {
	if !l.o.Watchdog {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.dogs[key]; w != nil {
		select {
		case <-w.done:
			l.unwatch(w)
		default:
			return w
		}
	}
	w := l.watch(key, l.owner, l.o.TTL, func(ctx context.Context) (bool, error) {
		n, err := redissonRenew.Run(ctx, l.c, []string{key}, l.o.TTL.Milliseconds(), l.owner).Int64()
		return n == 1, err
	})
	l.dogs[key] = w
	return w
}

// stopWatchdog stops key's renewal.
func (l *redissonHash) stopWatchdog(key string) {
	l.mu.Lock()
	w := l.dogs[key]
	delete(l.dogs, key)
	l.mu.Unlock()
	l.unwatch(w)
}

// Release implements Locker: RedissonLock.unlock().
func (l *redissonHash) Release(ctx context.Context, lease *Lease) error {
	if err := l.hit(ctx, "before-unlock"); err != nil {
		return err
	}
	n, err := redissonUnlock.Run(ctx, l.c, []string{lease.Key, l.channel(lease.Key)},
		redissonUnlockMessage, l.o.TTL.Milliseconds(), l.owner).Int64()
	switch {
	case errors.Is(err, redis.Nil):
		l.stopWatchdog(lease.Key)
		return fmt.Errorf("%s: %s is held by another owner: %w", l.name, lease.Key, ErrNotHeld)
	case err != nil:
		return unknown(l.name, "EVAL unlock", err)
	case n == 1:
		l.stopWatchdog(lease.Key)
	}
	return nil
}
