package lockimpl

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// setnxDel is the deadlock "fix" that seed 001 §四 and seed 003 (解决死锁)
// warn against: the value is the expiry timestamp <now + timeout + 1>; a
// client whose SETNX fails GETs it and, finding it in the past, DELetes the
// key and SETNXes again. Two clients that both read the same expired value
// can each DEL and SETNX in turn, and both win:
//
//	C1 DEL, C1 SETNX → 1, C2 DEL (C1's lock!), C2 SETNX → 1
//
// Clock: the client's wall clock (Env.Clock.Now), both for the value it
// writes and for judging another client's value expired, because that is
// what the documents do ("如果当前的时间已经大于lock.foo的值"); skew between
// clients therefore shifts who thinks a lock has expired. The key itself
// never expires on the server. Retry waits: seed 001 §五's 100 ms resolution
// and 10 s wait budget.
//
// Failpoints: setnx-del/before-setnx, setnx-del/after-setnx (hit after each
// SETNX, including the one that follows the DEL), setnx-del/after-get,
// setnx-del/before-del, setnx-del/after-del, setnx-del/before-release.
//
// Options: TTL (default 60 s, Java expireMsecs), RetryDelay (100 ms),
// RandomDelay, WaitTimeout (10 s, counted the Java way).
type setnxDel struct{ *base }

func init() {
	Register(Info{
		Name:    "setnx-del",
		Points:  points("setnx-del", "before-setnx", "after-setnx", "after-get", "before-del", "after-del", "before-release"),
		Source:  "seed 001 §四 (DEL race); seed 003",
		Summary: "SETNX timestamp; on an expired timestamp DEL then SETNX: two clients both win",
		// §四: clients judge the timestamp with their clocks and take over by
		// DEL then SETNX (two steps); unlock is DEL.
		Claims: Claims{Topology: SingleInstance, Expiry: ClientClockExpiry, RacyTakeover: true, Release: UnconditionalRelease},
		New: func(env Env, o Options) (Locker, error) {
			b, err := newBase("setnx-del", env, o, Options{TTL: javaExpireMsecs, RetryDelay: javaAcquiryResolution, WaitTimeout: javaTimeoutMsecs})
			if err != nil {
				return nil, err
			}
			return &setnxDel{b}, nil
		},
	})
}

// setnx is one SETNX of the timestamp "now + ttl + 1" (ms) followed by the
// after-setnx failpoint; it returns the value written when it won.
func (l *setnxDel) setnx(ctx context.Context, key string) (string, bool, error) {
	v := expiryMillis(l.env.Clock.Now(), l.o.TTL)
	ok, err := l.c.Do(ctx, "SETNX", key, v).Bool()
	if err != nil {
		return "", false, unknown(l.name, "SETNX", err)
	}
	if err := l.hit(ctx, "after-setnx"); err != nil {
		return "", false, err
	}
	return v, ok, nil
}

// Acquire implements Locker.
func (l *setnxDel) Acquire(ctx context.Context, key string) (*Lease, error) {
	var lease *Lease
	p := retryPolicy{delay: l.o.RetryDelay, random: l.o.RandomDelay, budget: l.o.WaitTimeout}
	err := l.retry(ctx, p, func() (attempt, error) {
		if err := l.hit(ctx, "before-setnx"); err != nil {
			return 0, err
		}
		v, ok, err := l.setnx(ctx, key)
		if err != nil {
			return 0, err
		}
		if ok {
			lease = &Lease{Key: key, Token: v, Acquired: l.env.Clock.Now()}
			return won, nil
		}
		cur, err := l.c.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			// Released between our SETNX and GET: try SETNX again at once.
			return retryNow, l.hit(ctx, "after-get")
		}
		if err != nil {
			return 0, unknown(l.name, "GET", err)
		}
		if err := l.hit(ctx, "after-get"); err != nil {
			return 0, err
		}
		exp, err := parseMillis(cur)
		if err != nil {
			return 0, errors.Join(ErrNotAcquired, err)
		}
		if exp >= l.env.Clock.Now().UnixMilli() {
			return retryAfterDelay, nil // still valid: wait for it
		}
		// Expired by our clock: the documented mistake — delete it, take it.
		if err := l.hit(ctx, "before-del"); err != nil {
			return 0, err
		}
		if err := l.c.Del(ctx, key).Err(); err != nil {
			return 0, unknown(l.name, "DEL", err)
		}
		if err := l.hit(ctx, "after-del"); err != nil {
			return 0, err
		}
		v, ok, err = l.setnx(ctx, key)
		if err != nil {
			return 0, err
		}
		if !ok {
			return retryAfterDelay, nil
		}
		lease = &Lease{Key: key, Token: v, Acquired: l.env.Clock.Now()}
		return won, nil
	})
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// Release implements Locker: a bare DEL, as seed 001 §三 releases.
func (l *setnxDel) Release(ctx context.Context, lease *Lease) error {
	if err := l.hit(ctx, "before-release"); err != nil {
		return err
	}
	return l.delRelease(ctx, lease.Key)
}
