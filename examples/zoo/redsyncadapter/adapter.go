// Package redsyncadapter is the zoo's one adapter for
// github.com/go-redsync/redsync/v4, shared by every pinned release (a Go
// module per release under examples/zoo, each with a replace to this one).
// It uses only what v4.0.3 already had (NewMutex, WithExpiry, WithTries,
// WithRetryDelayFunc, WithGenValueFunc, LockContext, UnlockContext,
// ExtendContext, ErrFailed); what came later (Until in v4.4,
// WithTimeoutFactor in v4.5, the go-redis v9 pool in v4.8, typed errors)
// each release's module hands in through Release.
package redsyncadapter

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"time"
	"unsafe"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// Release is what one pinned release of redsync has beyond v4.0.3's API.
// The zero value (but Version) is v4.0.3 itself.
type Release struct {
	// Version is the release as in go.mod, e.g. "v4.0.3".
	Version string
	// Pool makes the library's own pool over one node; nil: Pool, the
	// same code as the library's go-redis pools, for go-redis v9.
	Pool func(redis.UniversalClient) redsyncredis.Pool
	// Until is Mutex.Until (v4.4 on): when the lock's validity ends, as
	// the library computed it. Nil: the release keeps that instant to
	// itself, and the adapter computes it as a careful user would (until).
	Until func(*redsync.Mutex) time.Time
	// Options are the mutex options of later releases the adapter sets
	// (WithTimeoutFactor, v4.5 on); o is the spec's lock options.
	Options func(o lockimpl.Options) []redsync.Option
	// Answer says an error the release returns is a node's answer (the
	// key was not ours, or already expired), not a lost reply: typed
	// errors came with later releases (ErrTaken, ErrNodeTaken,
	// ErrLockAlreadyExpired in v4.8 on).
	Answer func(error) bool
}

// Info is the release on n nodes (Redlock from n = 3). Claims, from its
// README and the distlock page it implements: SET NX PX with a random
// value, a compare-and-delete release script; no fencing token; Extend
// exists but nothing calls it by itself: the battery calls it where a
// scenario sets workload.extend_every. The same claims for every release:
// a release is judged by what its documentation promises, not by what it
// got wrong. On one node it still runs the distlock page's step 3, the
// validity check: a grant whose votes came back after the TTL (less the
// drift) is released, not granted, measured on Go's monotonic clock
// (time.Now and Sub: mutex.go 52-63 at v4.0.3, 104-116 at v4.18.1), so
// grant_checked and grant_monotonic. extend_checked is the page's
// extension, which the README's "as described in this post" promises:
// an extend counts only "within the validity time", computed as an
// acquire's. v4.4 on keeps it (ExtendContext, mutex.go 112-128 at
// v4.4.1); before, ExtendContext returns the touch's yes and nothing else
// (mutex.go 97-106 at v4.0.3), so a holder can date the extended lease
// only from that yes: the bug (PR 71, issue 72), which the claim, the
// same for every release, makes a difference of the verdicts.
func (r Release) Info(n int) lockimpl.Info {
	info := lockimpl.Info{
		Name:    "redsync@" + r.Version,
		Summary: "go-redsync/redsync " + r.Version + ", one node",
		Claims: lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease,
			GrantChecked: true, GrantMonotonic: true, ExtendChecked: true},
		New: r.newLocker(n),
	}
	if n > 1 {
		info.Name = fmt.Sprintf("redsync-%d@%s", n, r.Version)
		info.Summary = fmt.Sprintf("go-redsync/redsync %s, Redlock on %d masters", r.Version, n)
		info.Nodes = func(lockimpl.Options) int { return n }
		info.Claims.Topology = lockimpl.Quorum
	}
	return info
}

type locker struct {
	r   Release
	env lockimpl.Env
	o   lockimpl.Options
	rs  *redsync.Redsync
}

// newLocker uses the first n of the run's masters (a scenario may start
// more than the lock needs).
func (r Release) newLocker(n int) func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
	return func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
		if o.TTL <= 0 || o.WaitTimeout <= 0 || len(env.Nodes) < n {
			return nil, fmt.Errorf("redsync %s: need lock.ttl, lock.wait_timeout and %d nodes", r.Version, n)
		}
		mk := r.Pool
		if mk == nil {
			mk = Pool
		}
		var pools []redsyncredis.Pool
		for _, c := range env.Nodes[:n] {
			pools = append(pools, mk(c))
		}
		return &locker{r: r, env: env, o: o, rs: redsync.New(pools...)}, nil
	}
}

// genValue is the library's own value: 16 random bytes, base64. The
// adapter makes it (WithGenValueFunc, there since v4.0.0) so that it knows
// the token before v4.3 gave Mutex.Value.
func genValue() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("redsync: token: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

type state struct {
	m     *redsync.Mutex
	value string
}

// Acquire is redsync's own LockContext: its tries, a delay between them,
// its release of every node after a failed try, and the spec's
// wait_timeout as the context's deadline (releases before v4.8 do not look
// at the context between tries: the pool refuses to send once it is done,
// and that ends the loop with a definite no). The delay is the spec's
// retry_delay d, drawn uniform in [d, 2d) with tries until the deadline;
// with no retry_delay the library paces its own retries (pacing).
func (l *locker) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	value, err := genValue()
	if err != nil {
		return nil, err
	}
	// tryStart is when the last try began (after its delay): the start
	// the library's own validity is measured from.
	tryStart := time.Now()
	stamp := func(wait time.Duration) time.Duration {
		tryStart = time.Now().Add(wait)
		return wait
	}
	opts := []redsync.Option{redsync.WithExpiry(l.o.TTL), redsync.WithGenValueFunc(func() (string, error) { return value, nil })}
	if d := l.o.RetryDelay; d > 0 {
		opts = append(opts, redsync.WithTries(1<<20), redsync.WithRetryDelayFunc(func(int) time.Duration {
			return stamp(d + time.Duration(l.env.Rand.Int64N(int64(d))))
		}))
	}
	if l.r.Options != nil {
		opts = append(opts, l.r.Options(l.o)...)
	}
	m := l.rs.NewMutex(key, opts...)
	if l.o.RetryDelay <= 0 {
		if err := pacing(m, stamp); err != nil {
			return nil, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, l.o.WaitTimeout)
	defer cancel()
	err = m.LockContext(wctx)
	if err == nil {
		lease := &lockimpl.Lease{Key: key, Token: value, Acquired: l.env.Clock.Now(), State: &state{m, value}}
		lease.Validity = time.Until(l.until(m, tryStart))
		return lease, nil
	}
	if ctx.Err() == nil && (errors.Is(err, redsync.ErrFailed) || l.definite(err)) {
		return nil, fmt.Errorf("%w: %v", lockimpl.ErrNotAcquired, err)
	}
	return nil, fmt.Errorf("redsync: outcome unknown: %w", err)
}

// pacing leaves m's retries to the library: the tries and the delay
// NewMutex gave it (v4.0.3: 32 tries, 500 ms whatever the try, redsync.go
// 26-27; v4.3.0 on: 32 tries, rand.Intn(200)+50 ms, redsync.go 32-35 at
// v4.3.0 and v4.4.1, 33-36 at v4.18.1), which no option can hand back once
// replaced. Its delay function stays the library's own, called as its
// loop calls it (mutex.go 49 at v4.0.3); the adapter only wraps it to
// learn when each try starts (stamp), as it does with its own delay: no
// release before v4.4 says when its validity began, and a careful user of
// the default delay has no other way to know. The function lives in the
// Mutex's unexported field delayFunc (mutex.go 22 at every pinned release).
func pacing(m *redsync.Mutex, stamp func(time.Duration) time.Duration) error {
	f := reflect.ValueOf(m).Elem().FieldByName("delayFunc")
	if !f.IsValid() || f.Type() != reflect.TypeFor[redsync.DelayFunc]() {
		return fmt.Errorf("redsync: this release's Mutex has no delayFunc field of type DelayFunc: the adapter cannot leave its retries to it")
	}
	p := (*redsync.DelayFunc)(unsafe.Pointer(f.UnsafeAddr()))
	own := *p
	*p = func(tries int) time.Duration { return stamp(own(tries)) }
	return nil
}

// Release unlocks on every node: false with no error is every node's
// answer that the key was not ours (definite); an error is definite only
// when every node behind it answered.
func (l *locker) Release(ctx context.Context, lease *lockimpl.Lease) error {
	ok, err := lease.State.(*state).m.UnlockContext(ctx)
	switch {
	case ok:
		return nil
	case err == nil || l.definite(err):
		return fmt.Errorf("%w: %v", lockimpl.ErrNotHeld, err)
	}
	return fmt.Errorf("redsync: unlock outcome unknown: %w", err)
}

// Extend is redsync's ExtendContext: its touch script (compare-and-pexpire)
// on every node to the mutex's own expiry, the spec's lock.ttl, which is
// what the runner asks for. From v4.4 it recomputes the validity from the
// extend's start and refuses (ErrExtendFailed) when the yeses came too
// late: the keys extended but the lock not to be trusted, so unknown.
// Before v4.4 a yes is all the user learns.
func (l *locker) Extend(ctx context.Context, lease *lockimpl.Lease, _ time.Duration) error {
	m := lease.State.(*state).m
	ok, err := m.ExtendContext(ctx)
	switch {
	case ok:
		lease.Acquired, lease.Validity = l.env.Clock.Now(), time.Until(l.until(m, time.Now()))
		return nil
	case err == nil || ctx.Err() == nil && l.definite(err):
		return fmt.Errorf("%w: %v", lockimpl.ErrNotHeld, err)
	}
	return fmt.Errorf("redsync: extend outcome unknown: %w", err)
}

// driftFactor is redsync's default clock drift factor (0.01 of the
// expiry), which every pinned release subtracts from a lock's validity.
const driftFactor = 0.01

// until is when the lock stops being valid. From v4.4 the library says so
// (Mutex.Until). Before, it computed the same instant on Lock (the last
// try's start plus the expiry less the drift) and kept it unexported, so
// a careful user computes it as the library did from start, the last
// try's start; after an Extend, whose yes carries no time, such a user
// can only take the expiry from the yes (start is now): trusting a late
// yes is that release's own bug (fixed in v4.4).
func (l *locker) until(m *redsync.Mutex, start time.Time) time.Time {
	if l.r.Until != nil {
		return l.r.Until(m)
	}
	return start.Add(l.o.TTL - time.Duration(float64(l.o.TTL)*driftFactor))
}

// definite says every error behind err is an answer: a node's reply, a
// command never sent, or one of the release's typed answers. Anything
// else (a timeout, a closed connection) may hide a command that ran.
func (l *locker) definite(err error) bool {
	for _, e := range leaves(err) {
		var ns *notSentError
		switch {
		case errors.As(e, &ns), errors.Is(e, redsync.ErrFailed), lockimpl.Replied(e) && !errors.Is(e, redis.Nil):
		case l.r.Answer != nil && l.r.Answer(e):
		default:
			return false
		}
	}
	return true
}

// leaves are the errors joined in err (go-multierror in early releases,
// errors.Join later), each unwrapped to its innermost cause.
func leaves(err error) []error {
	switch e := err.(type) {
	case nil:
		return nil
	case *notSentError:
		return []error{e}
	case interface{ WrappedErrors() []error }:
		return flatten(e.WrappedErrors())
	case interface{ Unwrap() []error }:
		return flatten(e.Unwrap())
	case interface{ Unwrap() error }:
		if in := e.Unwrap(); in != nil {
			if l := leaves(in); len(l) > 0 {
				return l
			}
		}
	}
	return []error{err}
}

func flatten(errs []error) []error {
	var out []error
	for _, e := range errs {
		out = append(out, leaves(e)...)
	}
	return out
}
