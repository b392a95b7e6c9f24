package scenarios

import (
	"time"

	"github.com/lockstorm/lockstorm/checker"
)

// The harness measures itself. A goroutine wakes every stallTick; a wake-up
// later than stallMin after the previous one means the harness's process
// (its clients included) was not running: a GC pause, a busy machine, a
// SIGSTOP. Each such stall goes into the history (checker.FStall), and a
// starvation proves a deadlock only net of the stalls inside it: the time
// the harness could not act may be the harness's, not the lock's.
const (
	stallTick = 2 * time.Millisecond
	stallMin  = 10 * time.Millisecond
)

// watchStalls records the harness's stalls in rec until stop is called.
func watchStalls(rec *checker.Recorder) (stop func()) {
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
					rec.Add(checker.Op{Type: checker.Ok, Process: checker.NemesisProcess, Client: -1, F: checker.FStall,
						N: int64(gap - stallTick)})
				}
				last = now
			}
		}
	}()
	return func() { close(done); <-finished }
}
