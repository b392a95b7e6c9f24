package checker

import (
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
		slices.SortStableFunc(rs, func(x, y extendFlight) int { return compareInt64(x.invoke, y.invoke) })
	}
}

func compareInt64(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// renewalCut is where h's hold stops being certain: the invoke of the
// first renewal inside it that did not renew (refused, or its outcome
// unknown) and that might have renewed without the harness, either
//   - spoiled: its outcome is unknown and the client was late, or every
//     server silent, for at least half of its flight (its timeout fired
//     in a stall with the reply ready, or it met a fault healed later than
//     the spec asked, recorded as the client's lag); or
//   - sent late: moved earlier by the client's lateness since the last
//     renewal that landed (or the grant), it would have been sent before
//     the next holder was granted the key (next, the earliest grant to
//     another client inside h).
func (a *analysis) renewalCut(key string, h holdRec, next int64) (int64, bool) {
	rs := a.renewals[h.Client]
	i, _ := slices.BinarySearchFunc(rs, h.From, func(e extendFlight, t int64) int { return compareInt64(e.invoke, t) })
	since := min(h.invoke, h.From)
	for ; i < len(rs) && rs[i].invoke < h.To; i++ {
		e := rs[i]
		if e.key != key || e.done <= e.invoke {
			continue
		}
		if e.outcome == history.Ok {
			since = e.invoke
			continue
		}
		if e.outcome == history.Info && 2*a.lateOrSilentFor(h.Client, e.invoke, e.done) >= e.done-e.invoke {
			return e.invoke, true
		}
		if late := liveness.Covered(a.lateFor(h.Client), since, e.invoke); late > 0 && e.invoke-late < next {
			return e.invoke - late, true
		}
	}
	return 0, false
}
