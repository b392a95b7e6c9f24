package checker

import (
	"slices"

	"github.com/lockstorm/lockstorm/checker/internal/liveness"
	"github.com/lockstorm/lockstorm/history"
)

// The harness's lateness comes in two kinds, both FStall entries of the
// nemesis process. Client -1 is the whole process not scheduled (the
// runner's ticker woke late): every client was late with it. Client c >= 0
// is one client's own lag: a sleep the harness owns in that client's loop
// (its critical section's hold, its think time, its back-off) woke N ns
// later than asked, while the rest of the process ran on (on a busy
// machine one goroutine waits on a run queue while the ticker's does not),
// or a fault that named that client (a pause, a cut of its links) was
// healed N ns later than the spec asked.
//
// A client's lag is recorded only where lateness can only delay that
// client: the sleep's end was due at Time - N and the client did not run
// again until Time. Inside its hold, that made the hold longer than the
// lock gave it, exactly as a whole-process stall does, so the rules that
// shorten a hold by the stalls inside it (overlap, false success) shorten
// it by its own client's lag too, and by no other client's: another
// client's lateness cannot lengthen this hold (a late grant read by the
// other makes its own hold look later and shorter, never this one
// longer). Between operations (think, back-off) it delays the client's
// next request, so a starvation is net of the moments every client that
// wanted the key was late (see starveExcused).

// stallOp takes one FStall entry.
func (a *analysis) stallOp(op *history.Op) {
	iv := liveness.Interval{From: op.Time - op.N, To: op.Time}
	if op.Client < 0 {
		a.stalls = append(a.stalls, iv)
		return
	}
	if a.lags == nil {
		a.lags = map[int][]liveness.Interval{}
	}
	a.lags[op.Client] = append(a.lags[op.Client], iv)
}

// anyStall says whether the history recorded any lateness of the harness.
func (a *analysis) anyStall() bool { return len(a.stalls) > 0 || len(a.lags) > 0 }

// lateFor are the stretches in which client was late by the harness's
// doing and may have had a hold lengthened: the whole process's stalls and
// the client's own lag, outside the nemesis's pauses of that client (see
// stallsOutsidePauses), merged so no time counts twice.
func (a *analysis) lateFor(client int) []liveness.Interval {
	if len(a.lags[client]) == 0 {
		return a.outsidePauses(client, a.stalls)
	}
	a.lateOnce.Do(func() {
		a.late = make(map[int][]liveness.Interval, len(a.lags))
		for c, lags := range a.lags {
			a.late[c] = liveness.Merge(append(slices.Clone(a.outsidePauses(c, a.stalls)), a.outsidePauses(c, lags)...))
		}
	})
	return a.late[client]
}

// mergeLags puts each client's lags in order, one interval per stretch
// (a hand-written history may list overlapping ones).
func (a *analysis) mergeLags() {
	for c, lags := range a.lags {
		a.lags[c] = liveness.Merge(lags)
	}
}

// starveExcused is the time in which a starvation of kd may be the
// harness's and not the lock's: the whole process's stalls, and the
// moments when every client that wanted kd was late by its own lag (none
// of them could ask, so none could be granted). A moment when one client
// that wanted the key was on time is not excused: the lock could have
// granted it. Without client lags it is the process's stalls alone.
func (a *analysis) starveExcused(kd *keyData) []liveness.Interval {
	if len(a.lags) == 0 || len(kd.wants) == 0 {
		return a.stalls
	}
	var onTime []liveness.Interval // wanted by some client on time
	for _, w := range kd.wants {
		onTime = liveness.AppendMinus(onTime, w.Interval, a.outsidePauses(w.client, a.lags[w.client]))
	}
	onTime = liveness.Merge(onTime)
	excused := slices.Clone(a.stalls)
	var from int64
	for _, iv := range onTime {
		if iv.From > from {
			excused = append(excused, liveness.Interval{From: from, To: iv.From})
		}
		from = max(from, iv.To)
	}
	if from < a.end {
		excused = append(excused, liveness.Interval{From: from, To: a.end})
	}
	return liveness.Merge(excused)
}

// lagFigures are the clients' own lags: how many, the longest and whose,
// and the total (ms).
type lagFigures struct {
	n              int
	maxMs, totalMs float64
	maxClient      int
}

func lagFiguresOf(lags map[int][]liveness.Interval) lagFigures {
	f := lagFigures{maxClient: -1}
	for c, ivs := range lags {
		n, maxMs, totalMs := liveness.Figures(ivs)
		f.n, f.totalMs = f.n+n, f.totalMs+totalMs
		if maxMs > f.maxMs || maxMs == f.maxMs && c < f.maxClient {
			f.maxMs, f.maxClient = maxMs, c
		}
	}
	return f
}
