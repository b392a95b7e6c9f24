package checker

import (
	"cmp"
	"slices"

	"github.com/lockstorm/lockstorm/checker/internal/liveness"
	"github.com/lockstorm/lockstorm/history"
)

// A renewing lock's hold outlives its TTL by its renewals, so shortening
// it by the harness's lateness inside, as a plain hold is, cannot tell
// whether a lapse was the lock's: the key expired when a renewal did not
// land, and the harness may be why it did not. Seen on renewal-blips × a
// correct watchdog with the harness's process stopped 200-290 ms now and
// then (issue 41):
//   - a renewal due at 1383 ms was sent at 1634 ms, after a 251 ms stall,
//     and found the key gone: it expired at 1638 ms, 1230 ms after the
//     last renewal, and the next client took it at 1644 ms;
//   - a renewal due at 905 ms was sent at 974 ms into a blackhole due to
//     heal at 744 ms and healed at 977 ms, and failed.
// Past such a renewal the hold rests on an outcome the harness may have
// made, so it counts only up to it (renewalCut).

// addRenewal records one completed extend or renewal of client.
func (a *analysis) addRenewal(client int, e extendFlight) {
	if a.renewals == nil {
		a.renewals = map[int][]extendFlight{}
	}
	a.renewals[client] = append(a.renewals[client], e)
}

// sortRenewals puts each client's renewals in the order of their invokes
// (a watchdog's and the workload's extends may complete out of it).
func (a *analysis) sortRenewals() {
	for _, rs := range a.renewals {
		slices.SortStableFunc(rs, func(x, y extendFlight) int { return cmp.Compare(x.invoke, y.invoke) })
	}
}

// renewalCut is where h's hold stops being certain: the invoke of the
// first renewal inside it that did not renew and that might have without
// the harness, either
//   - spoiled: its outcome is unknown, the client was late (or every
//     server silent) for at least half of its flight, and no fault the
//     spec asked for met it: its timeout fired in a stall with the reply
//     ready, or it met a fault only because the harness healed it late
//     (recorded as the client's lag); or
//   - too late: refused because the key was gone, and moved earlier by the
//     client's lateness since the last renewal that landed (or the grant)
//     it would have been sent before the next holder was granted the key
//     (next, the earliest grant to another client inside h), which is
//     when the key was gone at the latest.
//
// A renewal that failed in a fault the spec asked for is the lock's
// business (a lock that stops renewing at the first error must not be
// excused because a stall came near), and so is one refused later than
// the lateness explains.
func (a *analysis) renewalCut(key string, h holdRec, next int64) (int64, bool) {
	rs := a.renewals[h.Client]
	i, _ := slices.BinarySearchFunc(rs, h.From, func(e extendFlight, t int64) int { return cmp.Compare(e.invoke, t) })
	since := min(h.invoke, h.From)
	for ; i < len(rs) && rs[i].invoke < h.To; i++ {
		e := rs[i]
		if e.key != key || e.done <= e.invoke {
			continue
		}
		switch e.outcome {
		case history.Ok:
			since = e.invoke
		case history.Info:
			if 2*a.lateOrSilentFor(h.Client, e.invoke, e.done) >= e.done-e.invoke && !a.faultOnTime(h.Client, e.invoke, e.done) {
				return e.invoke, true
			}
		case history.Fail:
			if late := liveness.Covered(a.lateFor(h.Client), since, e.invoke); late > 0 && e.invoke-late < next {
				return e.invoke - late, true
			}
		}
	}
	return 0, false
}

// faultOnTime says a fault met client's [from, to) while it was due: one
// naming the client or any node, outside the client's own lags (a fault
// healed late is the client's lag from its due heal, and that part was
// the harness's). The process's stalls do not take a fault's time away: a
// blip dropped the command whether or not the harness ran.
func (a *analysis) faultOnTime(client int, from, to int64) bool {
	late := a.lags[client]
	meets := func(ivs []liveness.Interval) bool {
		for _, iv := range ivs {
			if iv.To <= from || iv.From >= to {
				continue
			}
			if len(liveness.AppendMinus(nil, liveness.Interval{From: max(iv.From, from), To: min(iv.To, to)}, late)) > 0 {
				return true
			}
		}
		return false
	}
	if meets(a.faulted[client]) {
		return true
	}
	for _, ivs := range a.nodeFaulted {
		if meets(ivs) {
			return true
		}
	}
	for _, f := range a.nodeFaulting {
		if f.from < to {
			return true
		}
	}
	return stillOpen(a.faulting, client, to)
}
