package scenarios

import (
	"time"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
)

// The fault controls that act on a client (nemesis.ClientControl): the
// client faults (pause, crash, clock jump and drift, pick: holder) reach a
// run's clients through these, whatever injects them (the timeline, a
// failpoint's fault, the explorer).

// osProcess is the client's own OS process when its lock runs in one
// (lockimpl/exec); client faults then act on the process itself.
func (c *runClient) osProcess() lockimpl.Process {
	p, _ := c.locker.(lockimpl.Process)
	return p
}

// Pause implements nemesis.ClientControl. A client process is stopped for
// real (SIGSTOP: every thread, its renewal included); the harness side of
// the client (its critical section) pauses with it.
func (r *run) Pause(client int) {
	c := r.clients[client]
	c.pausedAt.Store(r.rec.Now())
	c.pause.Pause()
	if p := c.osProcess(); p != nil {
		if err := p.Stop(); err != nil {
			r.log.Warn("pause: stop client process", "client", client, "err", err)
		}
	}
}

// Resume implements nemesis.ClientControl.
func (r *run) Resume(client int) {
	c := r.clients[client]
	if p := c.osProcess(); p != nil {
		if err := p.Cont(); err != nil {
			r.log.Warn("resume: continue client process", "client", client, "err", err)
		}
	}
	c.resumedAt.Store(r.rec.Now())
	c.pause.Resume()
}

// Crash implements nemesis.ClientControl: the client vanishes with whatever
// it holds; its connections close and its release is never sent. A client
// process is SIGKILLed: the kernel closes its sockets.
func (r *run) Crash(client int) {
	c := r.clients[client]
	if c.crashed.CompareAndSwap(false, true) {
		r.add(c, history.Ok, history.FCrash, "", func(o *history.Op) { o.Error = "crash fault" })
	}
	if p := c.osProcess(); p != nil {
		_ = p.Kill()
	}
	c.cancel()
	closeLocker(c)
	c.pause.Resume()
	for _, rdb := range c.rdb {
		rdb.Close()
	}
}

// Holders implements nemesis.ClientControl: the clients that hold a lease
// now (acquired, release not yet begun) and have not crashed.
func (r *run) Holders() []int {
	var out []int
	for _, c := range r.clients {
		if c.holding.Load() && !c.crashed.Load() {
			out = append(out, c.id)
		}
	}
	return out
}

// ClockJump implements nemesis.ClientControl.
func (r *run) ClockJump(client int, d time.Duration) {
	c := r.clients[client]
	c.clock.Jump(d)
	if p := c.osProcess(); p != nil {
		p.SyncClock()
	}
}

// ClockDrift implements nemesis.ClientControl.
func (r *run) ClockDrift(client int, rate float64) {
	c := r.clients[client]
	c.clock.SetDrift(rate)
	if p := c.osProcess(); p != nil {
		p.SyncClock()
	}
}
