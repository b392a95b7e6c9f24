package checker

import (
	"strings"

	"github.com/lockstorm/lockstorm/checker/internal/liveness"
	"github.com/lockstorm/lockstorm/history"
)

// overlapsWithoutStalls counts the overlapping pairs that remain when each
// hold is shortened by the harness's own stalls inside it (or inside the
// flight of the acquire that granted it). A holder whose
// critical section took 5 ms of its own and 300 ms of the harness being
// descheduled outlived a 200 ms lease because of the harness, not the
// lock: the clients are the harness's goroutines (or driven by them), and
// while it was not scheduled they could not finish, release or renew. If
// no overlap remains, the run proves nothing about the lock's exclusion.
// A hold is shortened by its own client's lag too, and only by its own
// (lateFor): one client's lateness lengthens no other client's hold.
func overlapsWithoutStalls(a *analysis) int {
	if !a.anyStall() {
		return -1
	}
	pairs := 0
	for _, kd := range a.keys {
		if len(kd.holds) < 2 {
			continue
		}
		short := &keyData{name: kd.name, holds: append([]holdRec(nil), kd.holds...)}
		for i := range short.holds {
			h := &short.holds[i]
			// From the acquire's invoke, not the grant: the lease began
			// when the server ran the command, at any time while the
			// acquire was in flight, and a stall between that and the
			// reply's receipt lengthened the hold as surely as one inside
			// it (a stall while one client's SET reply is in flight can
			// make two grants land fractions of a millisecond apart).
			if h.To > h.From {
				h.To -= liveness.Covered(a.lateFor(h.Client), min(h.invoke, h.From), h.To)
				h.To = max(h.To, h.From)
			}
		}
		pairs += overlapPass(short).pairs
	}
	return pairs
}

// stallOverlapCheck counts the overlaps left without the harness's stalls
// (an unfenced lock's overlaps only: a fenced one's are not a verdict).
type stallOverlapCheck struct{}

func (stallOverlapCheck) name() string { return "overlaps without the harness's stalls" }

func (stallOverlapCheck) run(a *analysis) finding {
	pairs := 0
	for _, ov := range a.overlaps() {
		pairs += ov.pairs
	}
	if pairs > 0 && !a.opts.Fenced && a.anyStall() {
		pairs = overlapsWithoutStalls(a)
	}
	return stallOverlapFinding(pairs)
}

// stallOverlapFinding is Result.OverlapsWithoutStalls.
type stallOverlapFinding int

func (f stallOverlapFinding) apply(r *Result) { r.OverlapsWithoutStalls = int(f) }

// healSlack is how soon after a stall a pause's heal still counts as
// delayed by it: the heal's goroutine runs within milliseconds of the stall
// ending, so a heal recorded later than this was on its own schedule.
const healSlack = int64(10e6)

// pauseRec is an open pause fault: when it started and whom it paused.
type pauseRec struct {
	from    int64
	clients []int
}

// pauseOp follows the nemesis's pause faults (FStart Ok of kind pause,
// its clients in Targets, and the FStop with the same N).
func (a *analysis) pauseOp(op *history.Op) {
	switch {
	case op.F == history.FStart && op.Type == history.Ok && op.Targets != nil && strings.HasPrefix(op.Value, "pause "):
		if a.pausing == nil {
			a.pausing = map[int64]pauseRec{}
		}
		a.pausing[op.N] = pauseRec{op.Time, op.Targets.Clients}
	case op.F == history.FStop:
		p, ok := a.pausing[op.N]
		if !ok {
			return
		}
		delete(a.pausing, op.N)
		if a.paused == nil {
			a.paused = map[int][]liveness.Interval{}
		}
		for _, c := range p.clients {
			a.paused[c] = append(a.paused[c], liveness.Interval{From: p.from, To: op.Time})
		}
	}
}

// outsidePauses are the stalls (or lags) that may have lengthened a hold of
// client: all but those lying within a nemesis pause of that client and
// ending well before its heal. While paused on purpose the client would
// not have run anyway, so such a stall lengthened nothing (a pause past the
// TTL is the fault under test, not the harness's doing); a stall that
// reaches the heal may have delayed it, and counts.
func (a *analysis) outsidePauses(client int, stalls []liveness.Interval) []liveness.Interval {
	pauses := a.paused[client]
	if len(pauses) == 0 {
		return stalls
	}
	out := make([]liveness.Interval, 0, len(stalls))
	for _, s := range stalls {
		inside := false
		for _, p := range pauses {
			if s.From >= p.From && s.To+healSlack <= p.To {
				inside = true
				break
			}
		}
		if !inside {
			out = append(out, s)
		}
	}
	return out
}
