package checker

import (
	"math"
	"strings"

	"github.com/lockstorm/lockstorm/checker/internal/liveness"
	"github.com/lockstorm/lockstorm/history"
)

// overlapsWithoutStalls counts the overlapping pairs that remain when each
// hold is shortened by the harness's own stalls inside it (or inside the
// flight of the acquire that granted it), and of those how many only a
// stale stamp explains (staleStamp): they are left out of the first count.
// A holder whose
// critical section took 5 ms of its own and 300 ms of the harness being
// descheduled outlived a 200 ms lease because of the harness, not the
// lock: the clients are the harness's goroutines (or driven by them), and
// while it was not scheduled they could not finish, release or renew. If
// no overlap remains, the run proves nothing about the lock's exclusion.
// A hold is shortened by its own client's lag too, and only by its own
// (lateFor): one client's lateness lengthens no other client's hold.
func overlapsWithoutStalls(a *analysis) (pairs, stale, cuts int) {
	if !a.anyStall() {
		return -1, 0, 0
	}
	stamps := a.opts.StampTokens && a.opts.StampLease > 0
	for _, kd := range a.keys {
		if len(kd.holds) < 2 {
			continue
		}
		short, vague, cut := a.shortenedHolds(kd)
		cuts += cut
		if !stamps {
			pairs += overlapPass(short).pairs
			for _, v := range vague {
				pairs += coveringHolds(short.holds, v)
			}
			continue
		}
		left, excused := a.withoutStaleStamps(kd, short.holds, vague)
		pairs, stale = pairs+left, stale+excused
	}
	return pairs, stale, cuts
}

// shortenedHolds are kd's holds, each shortened by its client's lateness
// inside it, and apart (vague) those late for longer than they held; cuts
// counts those ended at a renewal the lateness may have made fail
// (renewalCut).
func (a *analysis) shortenedHolds(kd *keyData) (short *keyData, vague []holdRec, cuts int) {
	short = &keyData{name: kd.name, holds: make([]holdRec, 0, len(kd.holds))}
	for i, h := range kd.holds {
		// From the acquire's invoke, not the grant: the lease began
		// when the server ran the command, at any time while the
		// acquire was in flight, and a stall between that and the
		// reply's receipt lengthened the hold as surely as one inside
		// it (a stall while one client's SET reply is in flight can
		// make two grants land fractions of a millisecond apart).
		if h.To > h.From {
			late := liveness.Covered(a.lateFor(h.Client), min(h.invoke, h.From), h.To)
			if late >= h.To-h.From && h.invoke < h.From {
				vague = append(vague, h)
				continue
			}
			to := max(h.To-late, h.From)
			if cut, ok := a.renewalCut(kd.name, h, nextGrant(kd.holds, i)); ok && cut < to {
				to, cuts = max(cut, h.From), cuts+1
			}
			h.To = to
		}
		short.holds = append(short.holds, h)
	}
	return short, vague, cuts
}

// nextGrant is the grant of the first hold after holds[i] (sorted by From)
// of another process, or the largest time when none.
func nextGrant(holds []holdRec, i int) int64 {
	for _, g := range holds[i+1:] {
		if g.Process != holds[i].Process && g.From > holds[i].From {
			return g.From
		}
	}
	return math.MaxInt64
}

// coveringHolds counts the holds that overlap v wherever v lay: v was late
// by more than it held, so it may have come and gone at any moment of its
// acquire's flight (a lease stamped when the acquire began can run out in
// flight); only a hold spanning that flight certainly overlapped it.
func coveringHolds(holds []holdRec, v holdRec) int {
	n := 0
	for _, h := range holds {
		if h.Process != v.Process && h.From <= v.invoke && h.To > v.From {
			n++
		}
	}
	return n
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
	stale, cuts := 0, 0
	if pairs > 0 && !a.opts.Fenced && a.anyStall() {
		pairs, stale, cuts = overlapsWithoutStalls(a)
	}
	return stallOverlapFinding{pairs, stale, cuts}
}

// stallOverlapFinding is Result.OverlapsWithoutStalls,
// Result.OverlapsStaleStamps and Result.HoldsCutAtRenewal.
type stallOverlapFinding struct{ pairs, stale, cuts int }

func (f stallOverlapFinding) apply(r *Result) {
	r.OverlapsWithoutStalls, r.OverlapsStaleStamps, r.HoldsCutAtRenewal = f.pairs, f.stale, f.cuts
}

// openFault is a fault not healed yet: when it started and what it named
// (clients, or nodes).
type openFault[K comparable] struct {
	from    int64
	targets []K
}

// pauseRec is an open fault on clients: when it started and whom it named.
type pauseRec = openFault[int]

// pauseOp follows the nemesis's faults by the clients they name (FStart
// Ok, its clients in Targets, and the FStop with the same N): the pause
// faults into paused, every fault into faulted.
func (a *analysis) pauseOp(op *history.Op) {
	switch {
	case op.F == history.FStart && op.Type == history.Ok && op.Targets != nil && len(op.Targets.Clients) > 0:
		if a.faulting == nil {
			a.pausing, a.faulting = map[int64]pauseRec{}, map[int64]pauseRec{}
		}
		rec := pauseRec{op.Time, op.Targets.Clients}
		a.faulting[op.N] = rec
		if strings.HasPrefix(op.Value, "pause ") {
			a.pausing[op.N] = rec
		}
	case op.F == history.FStop:
		if a.faulted == nil {
			a.paused, a.faulted = map[int][]liveness.Interval{}, map[int][]liveness.Interval{}
		}
		closeFault(a.faulting, a.faulted, op)
		closeFault(a.pausing, a.paused, op)
	}
}

// closeFault ends the open fault op heals, adding its span to each target
// it named.
func closeFault[K comparable](open map[int64]openFault[K], spans map[K][]liveness.Interval, op *history.Op) {
	p, ok := open[op.N]
	if !ok {
		return
	}
	delete(open, op.N)
	for _, c := range p.targets {
		spans[c] = append(spans[c], liveness.Interval{From: p.from, To: op.Time})
	}
}

// outsidePauses are the stalls (or lags) that may have lengthened a hold of
// client: a stall inside a nemesis pause of that client lengthened nothing
// (a pause past the TTL is the fault under test, not the harness's doing).
func (a *analysis) outsidePauses(client int, stalls []liveness.Interval) []liveness.Interval {
	return liveness.OutsidePauses(stalls, a.paused[client])
}
