package scenarios

import (
	"context"
	"time"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
)

// The harness measures itself. A goroutine wakes every stallTick; a wake-up
// later than stallMin after the previous one means the harness's process
// (its clients included) was not running: a GC pause, a busy machine, a
// SIGSTOP. Each such stall goes into the history (history.FStall), and a
// starvation proves a deadlock only net of the stalls inside it: the time
// the harness could not act may be the harness's, not the lock's.
const (
	stallTick = 2 * time.Millisecond
	stallMin  = 10 * time.Millisecond
)

// watchStalls records the harness's stalls in rec until stop is called.
func watchStalls(rec *history.Recorder) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(stallTick)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				now := time.Now()
				if gap := now.Sub(last); gap > stallMin {
					rec.Add(history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: -1, F: history.FStall,
						N: int64(gap - stallTick)})
				}
				last = now
			}
		}
	}()
	return func() { close(done); <-finished }
}

// The ticker sees only the whole process stopping. On a busy machine one
// client's goroutine can wait on a run queue for 80 ms while the ticker's
// runs on time: its hold's timer fires late, and its hold outlives a lease
// the lock gave it correctly. So each client also measures its own
// lateness wherever the harness intends a time for it: the sleeps the
// harness owns in its loop (the hold, think time, the back-off after an
// error). A wake-up more than stallMin after it was due is recorded as a
// stall of that client alone (history.FStall with Client set), from when
// the sleep was due to when the client ran again (recorded a little later:
// the entry's span lies inside the client's lateness, never outside it).
//
// What is not measured, and so never excused: the lock's own sleeps and
// failpoint sleeps (inside an acquire they may come before the command that
// granted the lease, where lateness lengthens no hold), and a reply read
// late (a goroutine woken by the network has no due time of its own: the
// harness cannot tell its lateness from the server's or the link's).

// sleepOwn is a sleep of d the harness owns for client c (see above), then
// the wait for the end of any pause of c, as client.Pauser.Sleep.
func (r *run) sleepOwn(ctx context.Context, c *runClient, d time.Duration) error {
	if err := r.sleepTimed(ctx, c, d); err != nil {
		return err
	}
	return c.pause.Wait(ctx)
}

// sleepTimed sleeps d for client c and records its lateness. The pause
// wait is left to the caller: a pause is the fault under test, not lateness
// (a timer is never late because of it, so a lag measured here is not the
// pause's; one inside a pause of c the checker disregards).
//
// While it sleeps, c.due holds the due time, so the early stop can tell a
// client that is late and has not run yet (run.lagging).
func (r *run) sleepTimed(ctx context.Context, c *runClient, d time.Duration) error {
	due := r.rec.Now() + int64(d)
	c.due.Store(due)
	defer c.due.Store(0)
	if err := lockimpl.SleepCtx(ctx, d); err != nil {
		return err
	}
	r.lateSince(due, c.id)
	return nil
}

// lateSince records a lag of each of clients when it is more than stallMin
// past due: they were meant to run at due and are running only now.
func (r *run) lateSince(due int64, clients ...int) {
	late := r.rec.Now() - due
	if late <= int64(stallMin) {
		return
	}
	for _, c := range clients {
		r.rec.Add(history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: c, F: history.FStall, N: late})
	}
}

// A client whose lock runs in a process of its own (lockimpl/exec) has
// that process started again by the harness after it died mid-request: a
// runtime loading, seconds on a busy machine, in which that client alone
// can ask nothing. readyAgain starts it before the next acquire is
// recorded, so the acquire measures the lock and not the start-up, and
// records the start-up as that client's lag: between operations, as a late
// back-off, it delays only the client's next request, and a starvation is
// net of the moments when every client that wanted the key was starting
// (counted as a wait, a key free all along read as starved). Ready's
// error is left to the acquire, which starts the process itself and
// records what fails.
func (r *run) readyAgain(ctx context.Context, c *runClient) {
	rd, ok := c.locker.(lockimpl.Readier)
	if !ok {
		return
	}
	due := r.rec.Now()
	_ = rd.Ready(ctx)
	r.lateSince(due, c.id)
}
