package lockimpl

import (
	"context"
	"fmt"
)

// fencedLock is set-nx-px plus the "token fetch" that seed 002 (RedLock 缺陷)
// cites against GC pauses — "在获取分布式锁时候同时获取一个token,提交数据时候
// 比对token" — i.e. Kleppmann's fencing token: after the SET NX PX succeeds,
// INCR a counter key "<key>:fence" and hand the result to the critical
// section as Lease.Fence. The lock itself is exactly set-nx-px's (same steps,
// failpoints under "fenced/"), so holders can still overlap after a pause
// or failover; the fenced resource, which accepts a write only with a token
// greater than the last it accepted, is what stays correct.
//
// INCR is atomic on the server, so tokens strictly increase across holders
// as long as the counter key survives (a failover that loses it can reissue
// a number: the documents do not address that).
//
// Clock: none for safety (server PX); waits on the monotonic clock, as
// set-nx-px.
//
// Failpoints: fenced/before-set, fenced/after-set, fenced/before-incr,
// fenced/after-incr, fenced/before-release, fenced/before-renew.
//
// Options: as set-nx-px (TTL 30 s, RetryDelay 100 ms, RandomDelay,
// WaitTimeout 10 s, Reentrant, Watchdog).
type fencedLock struct {
	*setNXPX
}

func fencedClaims(o Options) Claims {
	c := setNXPXClaims(o)
	c.Fencing = true
	return c
}

func init() {
	Register(Info{
		Name:     "fenced",
		Points:   points("fenced", append(append([]string(nil), setNXPXSteps...), "before-incr", "after-incr")...),
		Validate: validateSetNXPX,
		Source:   "seed 002 RedLock 缺陷 (token fetch); seed 002 常规方案",
		Summary:  "set-nx-px plus an INCR fencing token checked by the resource",
		// set-nx-px's claims, plus the INCR token the resource checks.
		Claims:    fencedClaims(Options{}),
		ClaimsFor: fencedClaims,
		New: func(env Env, o Options) (Locker, error) {
			l, err := newSetNXPX("fenced", env, o)
			if err != nil {
				return nil, err
			}
			return &fencedLock{l}, nil
		},
	})
}

// fenceKey is the counter the tokens come from.
func fenceKey(key string) string { return key + ":fence" }

// Acquire implements Locker. A reentrant re-acquire returns the held lease,
// whose token was already issued.
func (l *fencedLock) Acquire(ctx context.Context, key string) (*Lease, error) {
	lease, err := l.setNXPX.Acquire(ctx, key)
	if err != nil || lease.Fence != 0 {
		return lease, err
	}
	if err := l.hit(ctx, "before-incr"); err != nil {
		l.abandon(lease)
		return nil, err
	}
	fence, err := l.c.Incr(ctx, fenceKey(key)).Result()
	if err != nil {
		// The lock is held but carries no token, and the caller will not use
		// it: an unknown outcome; the key is left to expire.
		l.abandon(lease)
		return nil, fmt.Errorf("fenced: lock held, token fetch failed: %w", unknown(l.name, "INCR", err))
	}
	if err := l.hit(ctx, "after-incr"); err != nil {
		l.abandon(lease)
		return nil, err
	}
	lease.Fence = fence
	return lease, nil
}
