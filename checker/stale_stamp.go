package checker

import (
	"slices"

	"github.com/lockstorm/lockstorm/checker/internal/liveness"
)

// Stale stamps. A lock whose values are times its clients computed
// (Options.StampTokens: SETNX of now + TTL, a GETSET race's loser writing
// its own stamp) judges a key free when the stamp in it has passed by the
// reader's clock. A client that computed its stamp, was kept from running
// by the harness for a whole lease, and then wrote it, wrote a stamp that
// had already passed for everyone: the key looks free while its holder
// still holds, exactly as if that client's clock ran a lease behind. That
// is a fault of its own (getset-overwrite's clock skew), not one the
// scenario asked for, and the writer need not be either holder: any client
// mid-acquire may write (the GETSET loser does, and wins nothing). Nor do
// its effects end with the next grant: two clients that both believe they
// hold release in turn, each freeing the key under the next holder.
//
// So an overlap left after the holds are shortened (overlapsWithoutStalls)
// is still the harness's when a stale stamp explains it: some acquire W of
// the key, in flight from c to w, with w between the earlier hold A's
// acquire invoke and the later hold B's grant, was late by the harness's
// doing (lateFor: the process's stalls and W's own lag) for at least what
// A's lease had left after its hold (StampLease - A's hold), while the rest
// of [c, w], W's own time, was shorter than that: the stamp it may have
// computed at c and written at w had run out only because of the lateness.
// Lateness spread thinly over a long wait does not count, since W's own
// time in between would make the stamp old without the harness.

// withoutStaleStamps counts the overlapping pairs among short (holds
// shortened by their own lateness) and vague (holds late longer than they
// held, counted only against the holds covering their acquire's flight, as
// coveringHolds), and of them those a stale stamp explains (excused); left
// are the rest.
func (a *analysis) withoutStaleStamps(kd *keyData, short []holdRec, vague []holdRec) (left, excused int) {
	count := func(first, second *holdRec) {
		if a.staleStamp(kd, first, second) {
			excused++
		} else {
			left++
		}
	}
	slices.SortStableFunc(short, func(x, y holdRec) int { return int64cmp(x.From, y.From) })
	var open []int // holds not yet ended at the current From
	for j := range short {
		b := &short[j]
		keep := open[:0]
		for _, i := range open {
			if short[i].To > b.From {
				keep = append(keep, i)
			}
		}
		open = keep
		for _, i := range open {
			// A zero-length hold overlaps only those begun strictly
			// before it (overlapPass).
			if b.To > b.From || short[i].From < b.From {
				count(&short[i], b)
			}
		}
		open = append(open, j)
	}
	for k := range vague {
		v := &vague[k]
		for i := range short {
			h := &short[i]
			if h.Process != v.Process && h.From <= v.invoke && h.To > v.From {
				count(h, v)
			}
		}
	}
	return left, excused
}

func int64cmp(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// staleStamp says whether a stamp made stale by the harness's lateness may
// explain that second was granted while first held (see above).
func (a *analysis) staleStamp(kd *keyData, first, second *holdRec) bool {
	need := int64(a.opts.StampLease) - (first.To - first.From)
	if need <= 0 {
		return false // first outheld its lease on its own
	}
	from := min(first.invoke, first.From)
	for _, ac := range kd.acquires {
		done := ac.done
		if done < 0 {
			done = a.end
		}
		lo, hi := max(from, ac.invoke), min(done, second.From)
		if lo > hi {
			continue
		}
		late := a.lateFor(ac.client)
		if liveness.Covered(late, ac.invoke, hi) < need {
			continue
		}
		if staleWrite(late, ac.invoke, lo, hi, need) {
			return true
		}
	}
	return false
}

// staleWrite says whether a stamp computed at some c >= start and written
// at some w in [lo, hi] was late (late, the writer's lateness) for at least
// need within [c, w], with its own time there (the rest) under need.
func staleWrite(late []liveness.Interval, start, lo, hi, need int64) bool {
	var ivs []liveness.Interval
	for _, iv := range late {
		if iv.To > start && iv.From < hi {
			ivs = append(ivs, liveness.Interval{From: max(iv.From, start), To: min(iv.To, hi)})
		}
	}
	slices.SortFunc(ivs, func(x, y liveness.Interval) int { return int64cmp(x.From, y.From) })
	// With c at the start of interval i and w at the end of interval j
	// (or at lo, if later), the lateness is the sum over i..j and the
	// writer's own time the gaps between: an earlier c adds to both, so
	// for each j the search goes back only while the own time stays under
	// need.
	sum := make([]int64, len(ivs)+1)
	for k, iv := range ivs {
		sum[k+1] = sum[k] + iv.To - iv.From
	}
	for j := range ivs {
		w := max(ivs[j].To, lo)
		for i := j; i >= 0 && (w-ivs[i].From)-(sum[j+1]-sum[i]) < need; i-- {
			if sum[j+1]-sum[i] >= need {
				return true
			}
		}
	}
	return false
}
