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
// duration.
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
			hs[client]--
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
	return checker.Check(r.rec.History(), r.plan.Check).Verdict == checker.Unsafe
}
