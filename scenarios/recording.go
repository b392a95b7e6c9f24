package scenarios

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
)

// result is the typed outcome of one lock operation, as etcd's robustness
// client records them: the history needs to know not only whether an
// operation worked but whether its effect is known at all.
type result int

const (
	// success: the lock said yes (acquired, released).
	success result = iota
	// failure: a definite no; the operation did not take effect.
	failure
	// unknown: the reply was lost or the client gave up; the command may
	// still land later, so the history keeps the operation open.
	unknown
	// refused: the server answered with an error reply (ERR invalid expire
	// time, WRONGTYPE, NOSCRIPT, READONLY...). The command did not run, so
	// the outcome is definite, like a failure; but it says nothing about
	// the lock, so it is counted apart and a run made of refusals is not
	// evidence of anything.
	refused
)

// recordingLocker wraps any Locker and writes every call to the history as
// invoke then ok / fail / info. It is the only place where a lock's errors
// are turned into history entries, so every lock (shipped, a user's, a
// library adapter) is recorded the same way.
type recordingLocker struct {
	r      *run
	c      *runClient
	locker lockimpl.Locker
}

// classify maps a lock's error onto the error contract of lockimpl. An
// error reply anywhere in the chain means the server received the command
// and refused it: whatever the lock wrapped it in ("outcome unknown"), the
// reply itself is definite. redis.Nil is a reply too, but a lock that lets
// it escape means "no value", not a refusal, so it stays unknown.
func classify(err error, definite error) result {
	var rerr redis.Error
	switch {
	case err == nil:
		return success
	case errors.Is(err, definite):
		return failure
	case errors.As(err, &rerr) && !errors.Is(err, redis.Nil):
		return refused
	default:
		return unknown
	}
}

func (rl *recordingLocker) entry(res result) history.Type {
	switch res {
	case success:
		return history.Ok
	case failure, refused:
		return history.Fail
	}
	return history.Info
}

// acquire records and runs one Acquire.
func (rl *recordingLocker) acquire(ctx context.Context, key string) (*lockimpl.Lease, result, error) {
	rl.r.add(rl.c, history.Invoke, history.FAcquire, key, nil)
	lease, err := rl.call(lockimpl.CallAcquire, func() (*lockimpl.Lease, error) {
		return rl.locker.Acquire(lockimpl.WithCall(ctx, lockimpl.CallAcquire), key)
	})
	res := classify(err, lockimpl.ErrNotAcquired)
	tries := rl.c.tries.Take()
	rl.r.add(rl.c, rl.entry(res), history.FAcquire, key, func(o *history.Op) {
		// An acquire's tries are read only where they can pace (the
		// retry-cadence check needs many): a single one, most acquires,
		// would make each entry one the recorder stores whole (rare).
		if len(tries) > 1 {
			o.Tries = tries
		}
		if res == success {
			o.Value, o.Fence = lease.Token, lease.Fence
			rl.c.holding.Store(true)
			now := rl.r.rec.Now()
			rl.c.since.Store(now)
			rl.c.heldAt.Store(now)
			return
		}
		o.Error, o.ErrorReply = err.Error(), res == refused
		var ae *lockimpl.AttemptError
		if errors.As(err, &ae) {
			o.Value = ae.Token // the token the failed acquire tried
		}
	})
	return lease, res, err
}

// release records and runs one Release of key (a lease need not carry its
// key: a user's lock may leave it empty). before runs between the invoke and
// the call (the runner's own failpoint); its error ends the operation as
// unknown without calling the lock.
func (rl *recordingLocker) release(ctx context.Context, key string, lease *lockimpl.Lease, before func() error) (result, error) {
	rl.r.add(rl.c, history.Invoke, history.FRelease, key, func(o *history.Op) { o.Value = lease.Token })
	rl.c.holding.Store(false)
	var err error
	var began int64 // when the call began, if a failpoint could delay it
	if before != nil {
		err = before()
		if rl.c.fp.Armed() {
			began = rl.r.rec.Now()
		}
	}
	if err == nil {
		rl.c.resends.Begin(key)
		_, err = rl.call(lockimpl.CallRelease, func() (*lockimpl.Lease, error) {
			return nil, rl.locker.Release(lockimpl.WithCall(ctx, lockimpl.CallRelease), lease)
		})
		rl.c.resends.End()
	}
	res := classify(err, lockimpl.ErrNotHeld)
	rl.r.add(rl.c, rl.entry(res), history.FRelease, key, func(o *history.Op) {
		// The invoke ends the hold (the critical section is over); the
		// command could act only from here, which the false-success
		// check must know to order a late release after an expiry.
		o.N = began
		if err != nil {
			o.Error, o.ErrorReply = err.Error(), res == refused
		}
	})
	return res, err
}

// extend records and runs one Extend of key to ttl. The runner calls it
// only on a Locker that can extend (lockimpl.CanExtend).
func (rl *recordingLocker) extend(ctx context.Context, key string, lease *lockimpl.Lease, ttl time.Duration) (result, error) {
	done := rl.renewal(key, lease.Token)
	_, err := rl.call(lockimpl.CallExtend, func() (*lockimpl.Lease, error) {
		return nil, rl.locker.(lockimpl.Extender).Extend(lockimpl.WithCall(ctx, lockimpl.CallExtend), lease, ttl)
	})
	done(err, rl.c.tries.Take()...)
	// Back to holding; a lease extended is granted anew.
	now := rl.r.rec.Now()
	rl.c.since.Store(now)
	if err == nil {
		rl.c.heldAt.Store(now)
	}
	return classify(err, lockimpl.ErrNotHeld), err
}

// renewal records the invoke of an extend or a watchdog's renewal and
// returns what records its outcome. Extends are numbered per client (N):
// a watchdog renews beside its client's own operations, so invoke and
// completion are paired by number, not by the process's operation in flight.
func (rl *recordingLocker) renewal(key, token string) func(error, ...int64) {
	id := rl.c.extends.Add(1)
	rl.r.add(rl.c, history.Invoke, history.FExtend, key, func(o *history.Op) { o.Value, o.N = token, id })
	return func(err error, tries ...int64) {
		res := classify(err, lockimpl.ErrNotHeld)
		rl.r.add(rl.c, rl.entry(res), history.FExtend, key, func(o *history.Op) {
			o.N, o.Tries = id, tries
			if err != nil {
				o.Error, o.ErrorReply = err.Error(), res == refused
			}
		})
	}
}

// call runs one Locker call with the client's call in flight set, for the
// points its relays pass meanwhile (a client process's commands carry no
// context of ours).
func (rl *recordingLocker) call(call string, f func() (*lockimpl.Lease, error)) (*lockimpl.Lease, error) {
	c := rl.c
	now := rl.r.rec.Now()
	c.since.Store(now)
	if call == lockimpl.CallAcquire {
		c.acqFrom.Store(now)
	}
	c.call.Store(call)
	if call != lockimpl.CallRelease {
		c.tries.Begin(call)
	}
	defer func() {
		c.call.Store("")
		if call == lockimpl.CallAcquire {
			c.acqTo.Store(rl.r.rec.Now())
		}
	}()
	return f()
}
