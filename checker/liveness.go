package checker

import (
	"math"
	"slices"
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
}

func nsToMs(ns int64) float64 { return float64(ns) / 1e6 }

// percentile is the nearest-rank percentile of sorted xs (0 when empty).
func percentile(xs []int64, p float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(p*float64(len(xs))+0.999999) - 1
	return xs[max(0, min(i, len(xs)-1))]
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
	r := livenessResult{firstOver: -1}
	lat := a.latencies
	slices.Sort(lat)
	r.p50, r.p99 = nsToMs(percentile(lat, 0.50)), nsToMs(percentile(lat, 0.99))
	r.longestWait = nsToMs(a.longest)

	var handoffs []int64
	var sc scratch // one set of buffers for every key
	for _, kd := range a.keys {
		handoffs = appendHandoffs(handoffs, kd, &sc)
		st := starvation(kd, a.end, bound, a.starveExcused(kd), &sc)
		if st.longest > 0 && nsToMs(st.longest) > r.starved {
			r.starved, r.starvedKey, r.starvedFrom = nsToMs(st.longest), kd.name, st.from
		}
		if st.net > 0 && nsToMs(st.net) > r.net {
			r.net, r.netStall, r.netKey, r.netFrom = nsToMs(st.net), nsToMs(st.netStall), kd.name, st.netFrom
		}
		if st.firstOver >= 0 && (r.firstOver < 0 || st.firstOver < r.firstOver) {
			r.firstOver, r.firstOverKey = st.firstOver, kd.name
		}
	}
	slices.Sort(handoffs)
	if len(handoffs) > 0 {
		r.handoffP50, r.hoMax = nsToMs(percentile(handoffs, 0.5)), nsToMs(handoffs[len(handoffs)-1])
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
	inv, done, from := cursor{ts: invokes}, cursor{ts: dones}, cursor{ts: froms}
	for i := range kd.holds {
		hr := &kd.holds[i]
		if !hr.relOK {
			continue
		}
		r := hr.To
		// acquires in flight at r: invoked at or before r, not done before r
		started := inv.atOrAfter(r)
		for started < len(invokes) && invokes[started] == r {
			started++ // invoked at r: in flight too
		}
		if started-done.atOrAfter(r) <= 0 {
			continue
		}
		next := from.atOrAfter(r)
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

// cursor finds positions in one sorted slice for times that mostly rise
// (the ends of a key's holds, taken in order of their starts): from its
// last answer it steps forward a few places, and searches only when the
// time moved further. Three binary searches per hold were a third of the
// liveness check.
type cursor struct {
	ts []int64
	at int
}

// atOrAfter is the position of the first time at or after t (len: none).
func (c *cursor) atOrAfter(t int64) int {
	i := c.at
	switch {
	case i > 0 && c.ts[i-1] >= t:
		i, _ = slices.BinarySearch(c.ts[:i], t)
	default:
		for n := 0; i < len(c.ts) && c.ts[i] < t; n++ {
			if n == 8 {
				j, _ := slices.BinarySearch(c.ts[i:], t)
				i += j
				break
			}
			i++
		}
	}
	c.at = i
	return i
}

// starved is a key's starvation: its longest starved interval and when it
// began; the longest net of the harness's own stalls inside it (net,
// netStall, netFrom); and when the first interval whose net exceeds the
// bound began (-1: none).
type starved struct {
	longest, from          int64
	net, netStall, netFrom int64
	firstOver              int64
}

// starvation measures kd's starved intervals (see checkLiveness). A
// starved interval proves the lock starved only net of the time excused
// inside it (analysis.starveExcused: the harness's own stalls, and the
// moments when every client that wanted the key was late by its own lag):
// while the harness was not scheduled, or no client that wanted the key
// ran, nobody could ask or be granted, so that time may be the harness's,
// not the lock's. excused must not overlap itself (merged).
//
// The sweep reads the wants' and holds' starts and ends as four sorted
// streams, each sorted as plain int64s (the starts are in order already,
// wants and holds being kept sorted by their start). One sort of all four
// as (time, delta) events was over half of the liveness check.
func starvation(kd *keyData, end, bound int64, excused []interval, sc *scratch) starved {
	r := starved{firstOver: -1}
	if len(kd.wants) == 0 {
		return r
	}
	wantFrom, wantTo, holdFrom, holdTo := sc.wantFrom[:0], sc.wantTo[:0], sc.holdFrom[:0], sc.holdTo[:0]
	for _, w := range kd.wants {
		wantFrom, wantTo = append(wantFrom, w.from), append(wantTo, w.to)
	}
	for i := range kd.holds {
		holdFrom, holdTo = append(holdFrom, kd.holds[i].From), append(holdTo, kd.holds[i].To)
	}
	sc.wantFrom, sc.wantTo, sc.holdFrom, sc.holdTo = wantFrom, wantTo, holdFrom, holdTo
	for _, ts := range [][]int64{wantFrom, wantTo, holdFrom, holdTo} {
		slices.Sort(ts) // the starts are sorted already: a linear pass
	}
	interval := func(start, t int64) {
		if t-start > r.longest {
			r.longest, r.from = t-start, start
		}
		stalled := overlap(excused, start, t)
		net := t - start - stalled
		if net > r.net {
			r.net, r.netStall, r.netFrom = net, stalled, start
		}
		if net > bound && r.firstOver < 0 {
			r.firstOver = start
		}
	}
	var start int64
	var wf, wt, hf, ht int // next of each stream
	wants, holds, starving := 0, 0, false
	for {
		t, ok := nextTime(wantFrom, wf, wantTo, wt, holdFrom, hf, holdTo, ht)
		if !ok {
			break
		}
		wants += countAt(wantFrom, &wf, t) - countAt(wantTo, &wt, t)
		holds += countAt(holdFrom, &hf, t) - countAt(holdTo, &ht, t)
		now := wants > 0 && holds == 0
		switch {
		case now && !starving:
			start = t
		case !now && starving:
			interval(start, t)
		}
		starving = now
	}
	if starving {
		interval(start, end)
	}
	return r
}

// nextTime is the smallest of the four streams' next times (false: all
// are read).
func nextTime(a []int64, i int, b []int64, j int, c []int64, k int, d []int64, l int) (int64, bool) {
	t, ok := int64(math.MaxInt64), false
	for _, s := range [4]struct {
		ts []int64
		at int
	}{{a, i}, {b, j}, {c, k}, {d, l}} {
		if s.at < len(s.ts) && (!ok || s.ts[s.at] < t) {
			t, ok = s.ts[s.at], true
		}
	}
	return t, ok
}

// countAt reads the times equal to t at the head of sorted ts from *i on
// and says how many there were.
func countAt(ts []int64, i *int, t int64) int {
	n := 0
	for *i < len(ts) && ts[*i] == t {
		*i++
		n++
	}
	return n
}

// overlap is how much of [from, to) the intervals cover (they may overlap
// each other: the harness's stalls do not).
func overlap(ivs []interval, from, to int64) int64 {
	var n int64
	for _, iv := range ivs {
		lo, hi := max(iv.from, from), min(iv.to, to)
		if hi > lo {
			n += hi - lo
		}
	}
	return n
}

// livenessCheck measures acquisitions, latency, hand-off, fairness,
// starvation, the harness's own stalls and each client's own lag.
type livenessCheck struct{}

func (livenessCheck) name() string { return "liveness" }

func (livenessCheck) run(a *analysis) finding {
	f := livenessFinding{livenessResult: checkLiveness(a, int64(a.opts.DeadlockBound)),
		acquired: a.acquired, attempts: a.attempts, unknown: a.unknown}
	f.stalls, f.stallMaxMs, f.stallTotalMs = stallFigures(a.stalls)
	f.lags = lagFiguresOf(a.lags)
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
}
