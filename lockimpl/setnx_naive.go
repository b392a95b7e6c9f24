package lockimpl

import "context"

// setnxNaive is the first lock of seed 001 §三 and of seed 003 ("使用SETNX实现
// 分布式锁"): SETNX lock.foo <current Unix time + lock timeout + 1>, retry
// while it returns 0, DEL lock.foo to release. Nothing ever reads the
// timestamp and the key has no expiry, so a holder that dies without its DEL
// holds the lock forever — the deadlock both documents open §四 / "解决死锁"
// with.
//
// Clock: the client's wall clock (Env.Clock.Now), because the documents
// write the client's "current Unix time" into the value; here the value is
// only a label, so skew cannot matter. The retry waits use seed 001 §五's
// 100 ms resolution and 10 s wait budget (the documents give no others).
//
// Failpoints: setnx-naive/before-setnx, setnx-naive/after-setnx,
// setnx-naive/before-release.
//
// Options: TTL (default 60 s, only the label's offset), RetryDelay (100 ms),
// RandomDelay, WaitTimeout (10 s, counted the Java way).
type setnxNaive struct{ *base }

func init() {
	Register(Info{
		Name:    "setnx-naive",
		Points:  points("setnx-naive", "before-setnx", "after-setnx", "before-release"),
		Source:  "seed 001 §三; seed 003 (SETNX first algorithm)",
		Summary: "SETNX key timestamp, DEL to release, no expiry: a crashed holder deadlocks",
		// Nothing reads the timestamp and the key has no TTL; release is DEL.
		Claims: Claims{Topology: SingleInstance, Expiry: NoExpiry, Release: UnconditionalRelease},
		New: func(env Env, o Options) (Locker, error) {
			b, err := newBase("setnx-naive", env, o, Options{TTL: javaExpireMsecs, RetryDelay: javaAcquiryResolution, WaitTimeout: javaTimeoutMsecs})
			if err != nil {
				return nil, err
			}
			return &setnxNaive{b}, nil
		},
	})
}

// Acquire implements Locker.
func (l *setnxNaive) Acquire(ctx context.Context, key string) (*Lease, error) {
	var lease *Lease
	p := retryPolicy{delay: l.o.RetryDelay, random: l.o.RandomDelay, budget: l.o.WaitTimeout}
	err := l.retry(ctx, p, func() (attempt, error) {
		if err := l.hit(ctx, "before-setnx"); err != nil {
			return 0, err
		}
		now := l.env.Clock.Now()
		v := expiryMillis(now, l.o.TTL)
		ok, err := l.c.Do(ctx, "SETNX", key, v).Bool()
		if err != nil {
			return 0, unknown(l.name, "SETNX", err)
		}
		if err := l.hit(ctx, "after-setnx"); err != nil {
			return 0, err
		}
		if !ok {
			return retryAfterDelay, nil
		}
		lease = &Lease{Key: key, Token: v, Acquired: now}
		return won, nil
	})
	return lease, err
}

// Release implements Locker: a bare DEL, as both documents release.
func (l *setnxNaive) Release(ctx context.Context, lease *Lease) error {
	if err := l.hit(ctx, "before-release"); err != nil {
		return err
	}
	return l.delRelease(ctx, lease.Key)
}
