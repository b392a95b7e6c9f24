// Package examples puts two real Redis lock libraries on trial with
// lockstorm's public API, as any outside user would: an adapter per library
// (a lockimpl.Locker over the connections lockstorm hands it), the claims
// each library makes in its own documentation, and a go test that runs the
// battery against them (battery_test.go).
package examples

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// Redsync is github.com/go-redsync/redsync/v4 on one Redis node.
//
// Claims, from its README and the distlock page it implements: SET NX PX
// with a random value, a compare-and-delete release script; no fencing
// token; Extend exists but nothing calls it by itself (no renewal): the
// battery calls it where a scenario sets workload.extend_every. On one
// node it still checks the validity of its grant (the distlock page's step
// 3: votes back after the TTL less the drift are released, not granted), on
// Go's monotonic clock (mutex.go 104-116 at v4.18.1): grant_checked and
// grant_monotonic. Until is that validity, and ExtendContext dates an
// extended one from before its touch, refusing it when it is past
// (mutex.go 158-173): extend_checked.
var Redsync = lockimpl.Info{
	Name:    "redsync",
	Summary: "go-redsync/redsync v4, one node",
	Claims: lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease,
		GrantChecked: true, GrantMonotonic: true, ExtendChecked: true},
	New: newRedsync(1),
}

// Redlock is redsync on five independent masters: the Redlock algorithm,
// held when a majority (3) accepted within the validity, an extend too.
var Redlock = lockimpl.Info{
	Name:    "redsync-5",
	Summary: "go-redsync/redsync v4, Redlock on 5 masters",
	Nodes:   func(lockimpl.Options) int { return 5 },
	Claims:  lockimpl.Claims{Topology: lockimpl.Quorum, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease, ExtendChecked: true},
	New:     newRedsync(5),
}

type redsyncLock struct {
	env lockimpl.Env
	o   lockimpl.Options
	rs  *redsync.Redsync
}

// newRedsync uses the first n of the run's masters (a scenario may start
// more than the lock needs).
func newRedsync(n int) func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
	return func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
		if o.TTL <= 0 || o.WaitTimeout <= 0 || len(env.Nodes) < n {
			return nil, fmt.Errorf("redsync: need lock.ttl, lock.wait_timeout and %d nodes", n)
		}
		var pools []redis.Pool
		for _, c := range env.Nodes[:n] {
			pools = append(pools, goredis.NewPool(c))
		}
		return &redsyncLock{env: env, o: o, rs: redsync.New(pools...)}, nil
	}
}

// Acquire is redsync's own LockContext: its tries, a random delay between
// them (distlock's remedy for split votes: here uniform in [d, 2d) for the
// spec's retry_delay d, with tries until the deadline; with no retry_delay
// the library's own 32 tries and rand.Intn(200)+50 ms, redsync.go 33-36 at
// v4.18.1), its release of every node after a failed try, and the spec's
// wait_timeout as the context's deadline. Only the last try's
// error reaches us: a node that did not answer (RedisError) may still hold
// our value, so the outcome is then unknown; "taken" is a definite no.
func (l *redsyncLock) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	// Each try waits TTL × timeout factor for the nodes. redsync's 0.05
	// suits TTLs of seconds (400 ms for 8 s); the battery's TTLs are 150 ms
	// to 2 s while scheduling delays do not shrink with them, and a try
	// that times out can leave its key behind until the TTL. So: the
	// spec's node_timeout when it sets one, else at least 200 ms, at most
	// half the TTL.
	wait := min(max(l.o.TTL/20, 200*time.Millisecond), l.o.TTL/2)
	if l.o.NodeTimeout > 0 {
		wait = l.o.NodeTimeout
	}
	opts := []redsync.Option{redsync.WithExpiry(l.o.TTL), redsync.WithTimeoutFactor(float64(wait) / float64(l.o.TTL))}
	if d := l.o.RetryDelay; d > 0 {
		opts = append(opts, redsync.WithTries(1<<20),
			redsync.WithRetryDelayFunc(func(int) time.Duration { return d + time.Duration(l.env.Rand.Int64N(int64(d))) }))
	} else {
		// The library's own delay, rand.Intn(200)+50 ms (redsync.go 33-36),
		// drawn from the run's seeded source rather than math/rand's global
		// one: on sim a seed then replays the run, retries included.
		opts = append(opts, redsync.WithRetryDelayFunc(func(int) time.Duration {
			return time.Duration(50+l.env.Rand.Int64N(200)) * time.Millisecond
		}))
	}
	m := l.rs.NewMutex(key, opts...)
	wctx, cancel := context.WithTimeout(ctx, l.o.WaitTimeout)
	defer cancel()
	err := m.LockContext(wctx)
	if err == nil {
		return &lockimpl.Lease{Key: key, Token: m.Value(), Acquired: l.env.Clock.Now(),
			Validity: time.Until(m.Until()), State: m}, nil
	}
	// The wait's deadline cuts the try under way: its SET may have been
	// sent and land after redsync gave up (CI saw it hold the key until its
	// TTL, foreign-unlock-random: a failure at 4154.5 ms, the set received
	// at 4155.1 ms), so a deadline, like a node that did not answer, leaves
	// the outcome unknown.
	var re *redsync.RedisError
	if errors.As(err, &re) || ctx.Err() != nil || wctx.Err() != nil {
		return nil, fmt.Errorf("redsync: outcome unknown: %w", err)
	}
	return nil, fmt.Errorf("%w: %v", lockimpl.ErrNotAcquired, err)
}

// Release unlocks on every node; it is ours to judge only when every node
// answered.
func (l *redsyncLock) Release(ctx context.Context, lease *lockimpl.Lease) error {
	ok, err := lease.State.(*redsync.Mutex).UnlockContext(ctx)
	if ok {
		return nil
	}
	var re *redsync.RedisError
	if errors.As(err, &re) {
		return fmt.Errorf("redsync: unlock outcome unknown: %w", err)
	}
	return fmt.Errorf("%w: %v", lockimpl.ErrNotHeld, err)
}

// Extend is redsync's ExtendContext: its touch script (compare-and-pexpire)
// on every node, held again when a majority answered yes and the validity,
// recomputed from the extend's start, is positive (v4.4.0 on). It extends
// to the mutex's own expiry, the spec's lock.ttl, which is what the runner
// asks for. A majority that said yes too late (ErrExtendFailed) leaves the
// keys extended but the lock untrusted: unknown. Too few yeses with a node
// unheard: unknown; with every node answering: definitely not ours.
func (l *redsyncLock) Extend(ctx context.Context, lease *lockimpl.Lease, _ time.Duration) error {
	m := lease.State.(*redsync.Mutex)
	ok, err := m.ExtendContext(ctx)
	if ok {
		lease.Acquired, lease.Validity = l.env.Clock.Now(), time.Until(m.Until())
		return nil
	}
	var re *redsync.RedisError
	if errors.Is(err, redsync.ErrExtendFailed) || errors.As(err, &re) || ctx.Err() != nil {
		return fmt.Errorf("redsync: extend outcome unknown: %w", err)
	}
	return fmt.Errorf("%w: %v", lockimpl.ErrNotHeld, err)
}
