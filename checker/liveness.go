package checker

import (
	"slices"

	"github.com/lockstorm/lockstorm/checker/internal/liveness"
)

// livenessResult is the liveness and performance part of a Result.
type livenessResult struct {
	p50, p99          float64
	handoffP50, hoMax float64
	fairness          float64
	longestWait       float64
	starved           float64
	starvedKey        string
	starvedFrom       int64
	// firstOver is when the earliest starvation longer than the bound,
	// net of the harness's own stalls, began, on any key (-1: none);
	// firstOverKey is its key.
	firstOver    int64
	firstOverKey string
	// net is the longest starvation net of the harness's stalls inside it
	// (ms), on netKey from netFrom; netStall is how much stall it lost.
	net, netStall float64
	netKey        string
	netFrom       int64
	// quiet is the longest starvation net of the harness's stalls and of
	// the moments every server was silent (silence.go), ms, on quietKey;
	// silentIn is how much silence it lost; quietOver is when the earliest
	// starvation longer than the bound net of both began (-1: none). With
	// no silence they are net's and firstOver's.
	quiet, silentIn float64
	quietKey        string
	quietOver       int64
}

// checkLiveness measures acquire latency, hand-off, fairness and starvation.
//
//   - Hand-off: from a release ok that ended a hold to the next hold of the
//     key by anyone (0 if granted before the release's reply), counted only
//     when some acquire of the key was in flight at the release invoke.
//   - Fairness: Jain's index (Σx)²/(n·Σx²) over the acquisitions of the n
//     clients that attempted any; 0 when nothing was acquired.
//   - Starvation: a key is starved while some client wants it and no hold
//     is open. A want runs from a client's first acquire attempt to its
//     grant; a failed or unknown attempt followed directly by another attempt
//     on the same key continues it (a retry loop waits once). A want that
//     ends without a grant ends at its last definite refusal (a fail), or
//     at its start when it had none: unknown outcomes never make a
//     starvation (see want). A starved interval begins at the
//     later of the last hold end and the first pending attempt, and ends at
//     the next grant, when nobody wants the key any more, or at the end of
//     the history.
//
// bound is the deadlock bound: firstOver is the start of the earliest starved
// interval longer than it.
func checkLiveness(a *analysis, bound int64) livenessResult {
	r := livenessResult{firstOver: -1, quietOver: -1}
	lat := a.latencies
	slices.Sort(lat)
	r.p50, r.p99 = liveness.Ms(liveness.Percentile(lat, 0.50)), liveness.Ms(liveness.Percentile(lat, 0.99))
	r.longestWait = liveness.Ms(a.longest)

	var handoffs []int64
	var sc scratch // one set of buffers for every key
	for _, kd := range a.keys {
		handoffs = appendHandoffs(handoffs, kd, &sc)
		st := starvation(kd, a.end, bound, a.starveExcused(kd), &sc)
		if st.Longest > 0 && liveness.Ms(st.Longest) > r.starved {
			r.starved, r.starvedKey, r.starvedFrom = liveness.Ms(st.Longest), kd.name, st.From
		}
		if st.Net > 0 && liveness.Ms(st.Net) > r.net {
			r.net, r.netStall, r.netKey, r.netFrom = liveness.Ms(st.Net), liveness.Ms(st.NetStall), kd.name, st.NetFrom
		}
		if st.FirstOver >= 0 && (r.firstOver < 0 || st.FirstOver < r.firstOver) {
			r.firstOver, r.firstOverKey = st.FirstOver, kd.name
		}
		r.quietStarvation(a, kd, st, bound, &sc)
	}
	slices.Sort(handoffs)
	if len(handoffs) > 0 {
		r.handoffP50, r.hoMax = liveness.Ms(liveness.Percentile(handoffs, 0.5)), liveness.Ms(handoffs[len(handoffs)-1])
	}

	var sum, sq float64
	n := 0
	for _, c := range a.perClient {
		if c[0] == 0 {
			continue
		}
		n++
		x := float64(c[1])
		sum += x
		sq += x * x
	}
	if sq > 0 {
		r.fairness = sum * sum / (float64(n) * sq)
	}
	return r
}

// quietStarvation weighs kd's starvation st (net of the harness's
// stalls) again net of the servers' silences too, when it was over the
// bound and some silence was recorded.
func (r *livenessResult) quietStarvation(a *analysis, kd *keyData, st liveness.Starved, bound int64, sc *scratch) {
	silent := a.serversSilent()
	if st.FirstOver >= 0 && len(silent) > 0 {
		excused := liveness.Merge(append(slices.Clone(a.starveExcused(kd)), silent...))
		q := starvation(kd, a.end, bound, excused, sc)
		st.FirstOver, st.Net = q.FirstOver, q.Net
		if silentIn := liveness.Ms(q.NetStall - liveness.Covered(a.starveExcused(kd), q.NetFrom, q.NetFrom+q.Net+q.NetStall)); silentIn > r.silentIn {
			r.silentIn = silentIn
		}
	}
	if st.Net > 0 && liveness.Ms(st.Net) > r.quiet {
		r.quiet, r.quietKey = liveness.Ms(st.Net), kd.name
	}
	if st.FirstOver >= 0 && (r.quietOver < 0 || st.FirstOver < r.quietOver) {
		r.quietOver = st.FirstOver
	}
}

// scratch are buffers the liveness checks reuse from key to key (fresh
// ones per key were a tenth of Check's allocations).
type scratch struct {
	invokes, dones, froms []int64
	// the starvation sweep's streams
	wantFrom, wantTo, holdFrom, holdTo []int64
}

func appendHandoffs(out []int64, kd *keyData, sc *scratch) []int64 {
	if len(kd.holds) < 2 {
		return out
	}
	invokes, dones := sc.invokes[:0], sc.dones[:0]
	defer func() { sc.invokes, sc.dones = invokes, dones }()
	for _, ac := range kd.acquires {
		invokes = append(invokes, ac.invoke)
		if ac.done >= 0 {
			dones = append(dones, ac.done)
		}
	}
	slices.Sort(invokes)
	slices.Sort(dones)
	// holds are sorted by From
	froms := sc.froms[:0]
	for i := range kd.holds {
		froms = append(froms, kd.holds[i].From)
	}
	sc.froms = froms
	inv, done, from := liveness.NewCursor(invokes), liveness.NewCursor(dones), liveness.NewCursor(froms)
	for i := range kd.holds {
		hr := &kd.holds[i]
		if !hr.relOK {
			continue
		}
		r := hr.To
		// acquires in flight at r: invoked at or before r, not done before r
		started := inv.AtOrAfter(r)
		for started < len(invokes) && invokes[started] == r {
			started++ // invoked at r: in flight too
		}
		if started-done.AtOrAfter(r) <= 0 {
			continue
		}
		next := from.AtOrAfter(r)
		for next < len(froms) && next == i {
			next++
		}
		if next >= len(froms) {
			continue
		}
		out = append(out, max(0, froms[next]-hr.relDone))
	}
	return out
}

// starvation measures kd's starved intervals (liveness.Starvation),
// excused the time starveExcused gives: its wants' and holds' starts and
// ends are read into sc's streams, reused from key to key.
func starvation(kd *keyData, end, bound int64, excused []liveness.Interval, sc *scratch) liveness.Starved {
	if len(kd.wants) == 0 {
		return liveness.Starved{FirstOver: -1}
	}
	wantFrom, wantTo, holdFrom, holdTo := sc.wantFrom[:0], sc.wantTo[:0], sc.holdFrom[:0], sc.holdTo[:0]
	for _, w := range kd.wants {
		wantFrom, wantTo = append(wantFrom, w.From), append(wantTo, w.To)
	}
	for i := range kd.holds {
		holdFrom, holdTo = append(holdFrom, kd.holds[i].From), append(holdTo, kd.holds[i].To)
	}
	sc.wantFrom, sc.wantTo, sc.holdFrom, sc.holdTo = wantFrom, wantTo, holdFrom, holdTo
	return liveness.Starvation(liveness.Streams{WantFrom: wantFrom, WantTo: wantTo, HoldFrom: holdFrom, HoldTo: holdTo}, end, bound, excused)
}

// livenessCheck measures acquisitions, latency, hand-off, fairness,
// starvation, the harness's own stalls and each client's own lag.
type livenessCheck struct{}

func (livenessCheck) name() string { return "liveness" }

func (livenessCheck) run(a *analysis) finding {
	f := livenessFinding{livenessResult: checkLiveness(a, int64(a.opts.DeadlockBound)),
		acquired: a.acquired, attempts: a.attempts, unknown: a.unknown}
	f.stalls, f.stallMaxMs, f.stallTotalMs = liveness.Figures(a.stalls)
	f.lags = lagFiguresOf(a.lags)
	for _, iv := range a.serversSilent() {
		f.silentMs += liveness.Ms(iv.To - iv.From)
	}
	return f
}

// livenessFinding is the liveness check's figures; compose reads its
// starvation for the deadlock verdict.
type livenessFinding struct {
	livenessResult
	acquired, attempts, unknown int
	stalls                      int
	stallMaxMs, stallTotalMs    float64
	lags                        lagFigures
	silentMs                    float64 // every server silent, in all
}

func (lv livenessFinding) apply(r *Result) {
	r.Acquired, r.Attempts, r.Unknown = lv.acquired, lv.attempts, lv.unknown
	r.AcquireP50Ms, r.AcquireP99Ms = lv.p50, lv.p99
	r.HandoffP50Ms, r.HandoffMaxMs = lv.handoffP50, lv.hoMax
	r.Fairness, r.LongestWaitMs = lv.fairness, lv.longestWait
	r.LongestStarvedMs, r.StarvedKey, r.StarvedFromNs = lv.starved, lv.starvedKey, lv.starvedFrom
	r.HarnessStalls, r.HarnessStallMaxMs, r.HarnessStallTotalMs = lv.stalls, lv.stallMaxMs, lv.stallTotalMs
	r.ClientLags, r.ClientLagMaxMs, r.ClientLagTotalMs = lv.lags.n, lv.lags.maxMs, lv.lags.totalMs
	if lv.lags.n > 0 {
		c := lv.lags.maxClient
		r.ClientLagMaxClient = &c
	}
	r.StarvedNetMs = lv.net
	r.ServersSilentMs = lv.silentMs
}
