package lockimpl

import "context"

// setnxExpire is the "why not just EXPIRE?" lock of seed 001 §六 问题 1:
//
//	isSuccess = setnx key
//	if (isSuccess) expire key expireSec
//
// SETNX and EXPIRE are two commands, so a client (or server) that dies
// between them leaves a key with no TTL: "结果就是死锁了。锁永远不会超时".
// EXPIRE is sent as PEXPIRE so TTLs below a second keep their meaning. The
// pseudo-code ignores EXPIRE's result, and so does this lock: once SETNX said
// 1 the lock is held, whether or not the expiry landed.
//
// Clock: none on the client; expiry is the server's (PEXPIRE), which is the
// point of the variant. Retry waits: seed 001 §五's 100 ms resolution and 10 s
// wait budget.
//
// Failpoints: setnx-expire/before-setnx, setnx-expire/between-setnx-and-expire,
// setnx-expire/after-expire, setnx-expire/before-release.
//
// Options: TTL (default 60 s, Java expireMsecs), RetryDelay (100 ms),
// RandomDelay, WaitTimeout (10 s, counted the Java way).
type setnxExpire struct{ *base }

func init() {
	Register(Info{
		Name:    "setnx-expire",
		Points:  points("setnx-expire", "before-setnx", "between-setnx-and-expire", "after-expire", "before-release"),
		Source:  "seed 001 §六 Q1",
		Summary: "SETNX then EXPIRE as two commands: a crash between them leaves a lock that never expires",
		// §六 Q1: EXPIRE is a second command; unlock is DEL.
		Claims: Claims{Topology: SingleInstance, Expiry: SeparateExpiry, Release: UnconditionalRelease},
		New: func(env Env, o Options) (Locker, error) {
			b, err := newBase("setnx-expire", env, o, Options{TTL: javaExpireMsecs, RetryDelay: javaAcquiryResolution, WaitTimeout: javaTimeoutMsecs})
			if err != nil {
				return nil, err
			}
			return &setnxExpire{b}, nil
		},
	})
}

// Acquire implements Locker.
func (l *setnxExpire) Acquire(ctx context.Context, key string) (*Lease, error) {
	var lease *Lease
	p := retryPolicy{delay: l.o.RetryDelay, random: l.o.RandomDelay, budget: l.o.WaitTimeout}
	err := l.retry(ctx, p, func() (attempt, error) {
		if err := l.hit(ctx, "before-setnx"); err != nil {
			return 0, err
		}
		tok := l.token()
		ok, err := l.c.Do(ctx, "SETNX", key, tok).Bool()
		if err != nil {
			return 0, unknown(l.name, "SETNX", err)
		}
		if !ok {
			return retryAfterDelay, nil
		}
		lease = &Lease{Key: key, Token: tok, Acquired: l.env.Clock.Now()}
		if err := l.hit(ctx, "between-setnx-and-expire"); err != nil {
			return 0, err
		}
		if err := l.c.PExpire(ctx, key, l.o.TTL).Err(); err != nil && l.env.Log != nil {
			l.env.Log.Warn("setnx-expire: PEXPIRE failed; the lock is held with no TTL", "key", key, "err", err)
		}
		if err := l.hit(ctx, "after-expire"); err != nil {
			return 0, err
		}
		return won, nil
	})
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// Release implements Locker: a bare DEL, like the rest of seed 001.
func (l *setnxExpire) Release(ctx context.Context, lease *Lease) error {
	if err := l.hit(ctx, "before-release"); err != nil {
		return err
	}
	return l.delRelease(ctx, lease.Key)
}
