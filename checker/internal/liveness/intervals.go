// Package liveness holds the time arithmetic of the checker's liveness
// checks on plain times: intervals of lateness (the harness's stalls, the
// clients' own lag) merged and cut, the starvation sweep over a key's wants
// and holds, and the cursor and percentiles its figures read. It knows no
// history entry: the checker's pass (checker/analyze.go) gathers the times
// and the checker reads the figures back.
package liveness

import (
	"cmp"
	"slices"
)

// Interval is a closed time interval, in ns since the history's start.
type Interval struct{ From, To int64 }

// Merge sorts ivs by start and merges those that overlap or touch, in
// place.
func Merge(ivs []Interval) []Interval {
	if len(ivs) < 2 {
		return ivs
	}
	slices.SortFunc(ivs, func(x, y Interval) int { return cmp.Compare(x.From, y.From) })
	out := ivs[:1]
	for _, iv := range ivs[1:] {
		last := &out[len(out)-1]
		if iv.From <= last.To {
			last.To = max(last.To, iv.To)
			continue
		}
		out = append(out, iv)
	}
	return out
}

// AppendMinus appends to out the parts of iv that no interval of cut
// covers (cut in time order, as recorded).
func AppendMinus(out []Interval, iv Interval, cut []Interval) []Interval {
	from := iv.From
	for _, c := range cut {
		if c.To <= from || c.From >= iv.To {
			continue
		}
		if c.From > from {
			out = append(out, Interval{from, c.From})
		}
		from = max(from, c.To)
	}
	if from < iv.To {
		out = append(out, Interval{from, iv.To})
	}
	return out
}

// Covered is how much of [from, to) the intervals cover (they may overlap
// each other: the harness's stalls do not).
func Covered(ivs []Interval, from, to int64) int64 {
	var n int64
	for _, iv := range ivs {
		lo, hi := max(iv.From, from), min(iv.To, to)
		if hi > lo {
			n += hi - lo
		}
	}
	return n
}

// Figures counts intervals (the harness's stalls, a client's lags), the
// longest and the total (ms).
func Figures(ivs []Interval) (n int, maxMs, totalMs float64) {
	for _, iv := range ivs {
		d := Ms(iv.To - iv.From)
		maxMs, totalMs = max(maxMs, d), totalMs+d
	}
	return len(ivs), maxMs, totalMs
}

// Ms is ns in milliseconds.
func Ms(ns int64) float64 { return float64(ns) / 1e6 }

// Percentile is the nearest-rank percentile of sorted xs (0 when empty).
func Percentile(xs []int64, p float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(p*float64(len(xs))+0.999999) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

// healSlack is how soon after a stall a pause's heal still counts as
// delayed by it: the heal's goroutine runs within milliseconds of the stall
// ending, so a heal recorded later than this was on its own schedule.
const healSlack = int64(10e6)

// OutsidePauses are the stalls not lying within one of pauses and ending
// well before its heal. While paused on purpose a client would not have
// run anyway; a stall that reaches the heal may have delayed it, and counts.
func OutsidePauses(stalls, pauses []Interval) []Interval {
	if len(pauses) == 0 {
		return stalls
	}
	out := make([]Interval, 0, len(stalls))
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

// Intersect is the time both a and b cover (each merged, in time order).
func Intersect(a, b []Interval) []Interval {
	var out []Interval
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].From, b[j].From), min(a[i].To, b[j].To)
		if lo < hi {
			out = append(out, Interval{lo, hi})
		}
		if a[i].To < b[j].To {
			i++
		} else {
			j++
		}
	}
	return out
}
