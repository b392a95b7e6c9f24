package scenarios

import (
	"sync"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
)

// Stopping when the verdict is settled. An unsafe verdict cannot change
// once two clients both held a key: the rest of the run adds nothing but
// time. The runner watches the operations as they are recorded for a
// definite overlap (an acquire ok while another client's hold of the key
// is open: from its acquire ok to its release invoke, crash or abandon, as
// the checker counts holds), and ends the traffic a grace after it, so the
// witness's aftermath (the stale write, the late release) is still in the
// history. The checker still judges the whole history; the detector only
// decides when to stop, and only once the history so far is unsafe
// (settled). Never with a fenced resource (its overlaps may be safe), and
// never for safe, inconclusive or deadlock runs, which keep their whole
// duration. A run whose outcome can no longer change (settledFinal: unsafe
// where another verdict was expected) ends its traffic as soon as the
// history so far says so; its clients still finish the cycles they are in,
// whose findings are judged.
type overlapWatch struct {
	mu      sync.Mutex
	holders map[string]map[int]int // key → client → open holds (reentrant)
	found   chan struct{}          // closed at the first overlap
	at      time.Time
}

func newOverlapWatch() *overlapWatch {
	return &overlapWatch{holders: map[string]map[int]int{}, found: make(chan struct{})}
}

// observe sees one client operation as it is recorded.
func (w *overlapWatch) observe(client int, t history.Type, f, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case f == history.FAcquire && t == history.Ok:
		hs := w.holders[key]
		if hs == nil {
			hs = map[int]int{}
			w.holders[key] = hs
		}
		for other, n := range hs {
			if other != client && n > 0 && w.at.IsZero() {
				w.at = time.Now()
				close(w.found)
			}
		}
		hs[client]++
	case f == history.FRelease && t == history.Invoke:
		if hs := w.holders[key]; hs[client] > 0 {
			if hs[client]--; hs[client] == 0 {
				delete(hs, client) // each acquire loops over the holders left
			}
		}
	case f == history.FAbandon:
		delete(w.holders[key], client)
	case f == history.FCrash:
		for _, hs := range w.holders {
			delete(hs, client)
		}
	}
}

// rearm watches for the next overlap after one that settled nothing (see
// settled) and returns the channel closed when it comes.
func (w *overlapWatch) rearm() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.found, w.at = make(chan struct{}), time.Time{}
	return w.found
}

// settled says whether the history so far already makes the run unsafe:
// checked a grace after an overlap, when its aftermath is recorded. An
// overlap that goes away without the harness's stalls and the holders' own
// lag settles nothing (it would leave the run inconclusive), so the run
// goes on and may yet find a violation that holds: on a busy machine a
// buggy lock's first overlap is sometimes one the harness lengthened, and
// stopping there would hide the bug. The partial history lacks its end
// record; a violation is unsafe all the same, anything else is not settled.
func (r *run) settled() bool {
	return r.settle() != unsettled
}

// A settlement is what the history so far makes of the run's outcome.
type settlement int

const (
	// unsettled: the verdict may still change.
	unsettled settlement = iota
	// settledUnsafe: the verdict is unsafe, but the run may still owe a
	// finding its expectation forbids (a false success, a foreign renewal):
	// the traffic ends a grace after the overlap and every client finishes
	// the cycle it is in, whose release and write are judged.
	settledUnsafe
	// settledFinal: unsafe, and nothing the rest of the traffic could add
	// changes the verdict or whether it is as expected (final).
	settledFinal
)

// settle checks the history so far (see settled and final).
func (r *run) settle() settlement {
	res := checker.Check(r.rec.History(), r.plan.Check)
	switch {
	case res.Verdict != checker.Unsafe:
		return unsettled
	case r.final():
		return settledFinal
	}
	return settledUnsafe
}

// final says an unsafe result can no longer change whether the run is as
// expected (Outcome.AsExpected): the run expects another verdict, and
// unsafe stays unsafe (more history only adds overlaps), so it fails on its
// verdict whatever else it shows. A run expected unsafe is never final: a
// finding its expectation forbids may still come (a false success on a
// release, a foreign renewal), and stopping would hide it. Nor is a run
// without an expectation, whose findings are its report, nor one recording
// its steps (Config.RecordSteps): its history is the material of a
// schedule. Nor while a client is late in a sleep the harness owns: its
// lag, recorded only when it runs, may yet explain the overlap (the run
// would be inconclusive, not unsafe).
func (r *run) final() bool {
	if r.plan.Points.Recorded || r.lagging() {
		return false
	}
	exp := r.plan.Expectation.Verdict
	return exp != "" && exp != checker.Unsafe
}

// lagging says a client is past the due time of a sleep the harness owns
// (sleepTimed) and has not run since: its lag is not recorded yet.
func (r *run) lagging() bool {
	now := r.rec.Now()
	for _, c := range r.clients {
		if due := c.due.Load(); due != 0 && now > due {
			return true
		}
	}
	return false
}
