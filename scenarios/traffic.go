package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// clientLoop runs acquire → critical section → release until the run ends.
func (r *run) clientLoop(runCtx context.Context, c *runClient, attempts, acquired *atomic.Int64) {
	w := r.plan.Workload
	rng := rand.New(rand.NewPCG(r.seed(), uint64(c.id)+0x10000))
	ctx := c.ctx
	barrierCtx := runCtxOf(runCtx, ctx)
	holdCtx := runCtxOf(r.holdsEnd, ctx)
	cycles := 0
	for runCtx.Err() == nil && ctx.Err() == nil {
		if w.Ops > 0 && attempts.Add(1) > int64(w.Ops) {
			return
		}
		if w.Cycles > 0 && cycles >= w.Cycles {
			return
		}
		if err := c.pause.Wait(ctx); err != nil {
			return
		}
		key := keyName(rng.IntN(r.plan.Keys))
		c.fp.NewCycle()
		// A client waiting at a barrier for a step that never comes (the
		// step of another algorithm) is released when the run ends.
		if err := c.fp.Hit(barrierCtx, spec.PointBeforeAcquire); err != nil {
			r.crashedBy(c, err)
			return
		}
		r.readyAgain(ctx, c)
		lease, res, err := c.rec.acquire(ctx, key)
		switch res {
		case success:
			acquired.Add(1)
			cycles++
		case failure:
			if r.sleepThink(ctx, c) != nil {
				return
			}
			continue
		case refused:
			// The server refuses the command (a bad option, a read-only
			// replica): back off as after a connection error, or the client
			// would flood the server and the history with refusals.
			if r.backoff(ctx, c) != nil {
				return
			}
			continue
		default:
			if r.crashedBy(c, err) {
				return
			}
			r.newProcess(c)
			if r.backoff(ctx, c) != nil {
				return
			}
			continue
		}
		if !r.criticalSection(ctx, holdCtx, c, key, lease, rng) {
			return
		}
		if !r.releaseLease(ctx, c, key, lease) {
			return
		}
		if r.sleepThink(ctx, c) != nil {
			return
		}
	}
}

// releaseLease releases lease and, when the outcome is unknown and the
// workload says so (release_again), asks once more after the back-off,
// under a new process (the first release may still land). It returns false
// when the client crashed or was cancelled.
func (r *run) releaseLease(ctx context.Context, c *runClient, key string, lease *lockimpl.Lease) bool {
	res, err := c.rec.release(ctx, key, lease, func() error { return c.fp.Hit(ctx, spec.PointBeforeRelease) })
	for again := r.plan.Workload.ReleaseAgain; res == unknown; again = false {
		if r.crashedBy(c, err) {
			return false
		}
		r.newProcess(c)
		if !again {
			break
		}
		if r.backoff(ctx, c) != nil {
			return false
		}
		res, err = c.rec.release(ctx, key, lease, nil)
	}
	return true
}

// criticalSection reads the counter, holds, writes N+1. It returns false
// when the client crashed or was cancelled inside. The hold (not the
// write, not the release) ends early when the traffic's time is up
// (holdCtx ends): see run.holdsEnd.
func (r *run) criticalSection(ctx, holdCtx context.Context, c *runClient, key string, lease *lockimpl.Lease, rng *rand.Rand) bool {
	if r.abandoned(c, key, lease) {
		return true
	}
	r.add(c, history.Invoke, history.FRead, key, func(o *history.Op) { o.Fence = lease.Fence })
	n := r.res.read(key, lease.Fence)
	r.add(c, history.Ok, history.FRead, key, func(o *history.Op) { o.N = n; o.Fence = lease.Fence })
	hold := r.plan.Workload.CSMin
	if span := r.plan.Workload.CSMax - r.plan.Workload.CSMin; span > 0 {
		hold += time.Duration(rng.Int64N(int64(span) + 1))
	}
	if err := c.fp.Hit(ctx, spec.PointHold); err != nil {
		return !r.crashedBy(c, err)
	}
	refused, err := r.holdExtending(ctx, holdCtx, c, key, lease, hold)
	if err != nil {
		r.crashedBy(c, err)
		return false
	}
	if refused && r.plan.Workload.Client == spec.Careful {
		// The lock said, definitely, that the lease is not ours any more:
		// a careful holder believes it at once (as a redsync user whose
		// Extend returned ErrExtendFailed stops), writes nothing and goes
		// on to release.
		r.add(c, history.Ok, history.FAbandon, key, func(o *history.Op) { o.Value = lease.Token; o.Error = "extend refused" })
		return true
	}
	if r.abandoned(c, key, lease) {
		return true
	}
	r.add(c, history.Invoke, history.FWrite, key, func(o *history.Op) { o.N = n + 1; o.Fence = lease.Fence })
	if r.res.write(key, n+1, lease.Fence) {
		r.add(c, history.Ok, history.FWrite, key, func(o *history.Op) { o.N = n + 1; o.Fence = lease.Fence })
	} else {
		r.add(c, history.Fail, history.FWrite, key, func(o *history.Op) {
			o.N = n + 1
			o.Fence = lease.Fence
			o.Error = "stale fencing token"
		})
	}
	return true
}

// markCrashed makes c dead at once: the crash is recorded (once), its
// context ends, and its connections' hooks refuse every further command.
// It is safe to call from any of the client's goroutines (a command point
// in its watchdog): what must wait for those goroutines is left to
// crashedBy in the client's main loop.
func (r *run) markCrashed(c *runClient, err error) {
	if c.crashed.CompareAndSwap(false, true) {
		r.add(c, history.Ok, history.FCrash, "", func(o *history.Op) { o.Error = errText(err) })
	}
	c.cancel()
}

// abandoned is a careful client's check before it acts on the resource: a
// lease is over when the lock reported it lost, or when its validity has
// elapsed since it was acquired, measured on the client's own clock (all a
// real client has: a skewed or drifting clock makes it trust too long or
// give up too early, which is the point of measuring there). When over, the
// abandonment is recorded (the hold ends there) and the client goes on to
// release. A careless client never abandons.
func (r *run) abandoned(c *runClient, key string, lease *lockimpl.Lease) bool {
	if r.plan.Workload.Client != spec.Careful {
		return false
	}
	why := ""
	if lease.Lost != nil {
		select {
		case <-lease.Lost:
			why = "lock reported lost"
		default:
		}
	}
	if why == "" && lease.Validity > 0 {
		if el := c.clock.Now().Sub(lease.Acquired); el >= lease.Validity {
			why = fmt.Sprintf("validity %v over (%v since acquired, client clock)", lease.Validity, el.Round(time.Microsecond))
		}
	}
	if why == "" {
		return false
	}
	r.add(c, history.Ok, history.FAbandon, key, func(o *history.Op) { o.Value = lease.Token; o.Error = why })
	return true
}

// holdExtending is the critical section's hold; with workload.extend_every
// on a lock that can extend, the hold is cut into slices of that length and
// the lease is extended to the lock's TTL after each, as a holder whose work
// outlasts its TTL does. A definite "not yours" stops the extending and is
// reported (refused): a careful holder then stops at once, a careless one
// works on regardless. An unknown outcome stops nothing.
func (r *run) holdExtending(ctx, holdCtx context.Context, c *runClient, key string, lease *lockimpl.Lease, hold time.Duration) (refused bool, _ error) {
	every := r.plan.Workload.ExtendEvery
	if every <= 0 || !lockimpl.CanExtend(c.locker) {
		return false, r.work(ctx, holdCtx, c, lease, hold)
	}
	for hold > 0 {
		d := min(every, hold)
		if err := r.work(ctx, holdCtx, c, lease, d); err != nil {
			return false, err
		}
		hold -= d
		if hold <= 0 || holdCtx.Err() != nil || r.leaseOver(c, lease) {
			break // a careful holder whose lease is over extends nothing
		}
		res, err := r.extendOnce(ctx, c, key, lease)
		if r.crashedBy(c, err) {
			if err == nil {
				err = c.ctx.Err()
			}
			return false, err
		}
		if res == failure {
			if r.plan.Workload.Client == spec.Careful {
				return true, nil
			}
			refused = true
			break
		}
	}
	return refused, r.work(ctx, holdCtx, c, lease, hold)
}

// extendOnce extends lease once. A careful client gives the call no more
// time than its lease has left (as a redsync user passes a context whose
// deadline is Until()): an extend that cannot answer before the lease ends
// is an unknown outcome, and the holder gives up rather than wait on it.
func (r *run) extendOnce(ctx context.Context, c *runClient, key string, lease *lockimpl.Lease) (result, error) {
	if r.plan.Workload.Client == spec.Careful && lease.Validity > 0 {
		left := lease.Validity - c.clock.Now().Sub(lease.Acquired)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, max(left, 0))
		defer cancel()
	}
	return c.rec.extend(ctx, key, lease, r.plan.Workload.ExtendTTL)
}

// leaseOver says a careful client's lease has run out on its own clock.
func (r *run) leaseOver(c *runClient, lease *lockimpl.Lease) bool {
	return r.plan.Workload.Client == spec.Careful && lease.Validity > 0 && c.clock.Now().Sub(lease.Acquired) >= lease.Validity
}

// work is the critical section's hold. A careless client holds for d. A
// careful one works under its lease's deadline, as a client honouring
// redsync's Until() runs its work under context.WithDeadline: the work stops
// when the validity runs out on the client's clock or when the lock reports
// it lost, whichever comes first, and the check before the write then
// abandons. A pause still defeats it: a paused client's timer fires only when
// the world restarts, which is why careful clients are not safe under pauses
// past the TTL either. Either ends early, without error, when holdCtx ends
// while ctx does not (the traffic's time is up).
func (r *run) work(ctx, holdCtx context.Context, c *runClient, lease *lockimpl.Lease, d time.Duration) error {
	if r.plan.Workload.Client == spec.Careful && lease.Validity > 0 {
		d = max(0, min(d, lease.Validity-c.clock.Now().Sub(lease.Acquired)))
	}
	if r.plan.Workload.Client == spec.Careful && lease.Lost != nil {
		lctx, cancel := context.WithCancel(holdCtx)
		defer cancel()
		go func() {
			select {
			case <-lease.Lost:
				cancel()
			case <-lctx.Done():
			}
		}()
		holdCtx = lctx
	}
	if err := r.sleepTimed(holdCtx, c, d); err != nil && ctx.Err() != nil {
		return err
	}
	return c.pause.Wait(ctx)
}

// crashedBy records a crash when err says the client died (a failpoint
// crash or a crash fault cancelling it) and reports whether it did.
func (r *run) crashedBy(c *runClient, err error) bool {
	if errors.Is(err, lockimpl.ErrCrashed) || c.crashed.Load() {
		r.markCrashed(c, err)
		closeLocker(c)
		for _, rdb := range c.rdb {
			rdb.Close()
		}
		return true
	}
	return c.ctx.Err() != nil
}

// runCtxOf is ctx, also cancelled when the run's time is up.
func runCtxOf(runCtx, ctx context.Context) context.Context {
	merged, cancel := context.WithCancel(ctx)
	context.AfterFunc(runCtx, cancel)
	return merged
}

// backoff waits after an unknown outcome before the client tries again, as a
// real client backs off after a connection error; without it a client facing
// a dead link would spin and flood the history.
func (r *run) backoff(ctx context.Context, c *runClient) error {
	return r.sleepOwn(ctx, c, r.plan.Workload.Backoff)
}

func (r *run) sleepThink(ctx context.Context, c *runClient) error {
	if r.plan.Workload.Think > 0 {
		return r.sleepOwn(ctx, c, r.plan.Workload.Think)
	}
	return ctx.Err()
}

func (r *run) seed() uint64 { return r.plan.Seed }
