package scenarios

import (
	"context"
	"errors"

	"github.com/lockstorm/lockstorm/checker"
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

// classify maps a lock's error onto the error contract of lockimpl.
func classify(err error, definite error) result {
	switch {
	case err == nil:
		return success
	case errors.Is(err, definite):
		return failure
	default:
		return unknown
	}
}

func (rl *recordingLocker) entry(res result) checker.Type {
	switch res {
	case success:
		return checker.Ok
	case failure:
		return checker.Fail
	}
	return checker.Info
}

// acquire records and runs one Acquire.
func (rl *recordingLocker) acquire(ctx context.Context, key string) (*lockimpl.Lease, result, error) {
	rl.r.add(rl.c, checker.Invoke, checker.FAcquire, key, nil)
	lease, err := rl.locker.Acquire(ctx, key)
	res := classify(err, lockimpl.ErrNotAcquired)
	rl.r.add(rl.c, rl.entry(res), checker.FAcquire, key, func(o *checker.Op) {
		if res == success {
			o.Value, o.Fence = lease.Token, lease.Fence
			return
		}
		o.Error = err.Error()
	})
	return lease, res, err
}

// release records and runs one Release of key (a lease need not carry its
// key: a user's lock may leave it empty). before runs between the invoke and
// the call (the runner's own failpoint); its error ends the operation as
// unknown without calling the lock.
func (rl *recordingLocker) release(ctx context.Context, key string, lease *lockimpl.Lease, before func() error) (result, error) {
	rl.r.add(rl.c, checker.Invoke, checker.FRelease, key, func(o *checker.Op) { o.Value = lease.Token })
	var err error
	if before != nil {
		err = before()
	}
	if err == nil {
		err = rl.locker.Release(ctx, lease)
	}
	res := classify(err, lockimpl.ErrNotHeld)
	rl.r.add(rl.c, rl.entry(res), checker.FRelease, key, func(o *checker.Op) {
		if err != nil {
			o.Error = err.Error()
		}
	})
	return res, err
}
