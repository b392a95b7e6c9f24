package liveness

import (
	"math"
	"slices"
)

// Cursor finds positions in one sorted slice for times that mostly rise
// (the ends of a key's holds, taken in order of their starts): from its
// last answer it steps forward a few places, and searches only when the
// time moved further. Three binary searches per hold were a third of the
// liveness check.
type Cursor struct {
	ts []int64
	at int
}

// NewCursor is a cursor on sorted ts, at its start.
func NewCursor(ts []int64) Cursor { return Cursor{ts: ts} }

// AtOrAfter is the position of the first time at or after t (len: none).
func (c *Cursor) AtOrAfter(t int64) int {
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

// Streams are one key's wants and holds as four streams of times: when
// each want and each hold began and ended. Starvation sorts them in place.
type Streams struct {
	WantFrom, WantTo, HoldFrom, HoldTo []int64
}

// Starved is a key's starvation: its longest starved interval and when it
// began (Longest, From); the longest net of the excused time inside it
// (Net, NetStall: the excused time it lost, NetFrom); and when the first
// interval whose net exceeds the bound began (FirstOver, -1: none).
type Starved struct {
	Longest, From          int64
	Net, NetStall, NetFrom int64
	FirstOver              int64
}

// Starvation measures a key's starved intervals: a key is starved while
// some client wants it and no hold is open, from the later of the last
// hold's end and the first pending want to the next grant, the end of the
// wants, or end (the end of the history). A starved interval proves the
// lock starved only net of the time excused inside it (the harness's own
// stalls, and the moments when every client that wanted the key was late
// by its own lag): while the harness was not scheduled, or no client that
// wanted the key ran, nobody could ask or be granted, so that time may be
// the harness's, not the lock's. excused must not overlap itself (Merge).
//
// The sweep reads the four streams each sorted as plain int64s (the
// starts come in order already, wants and holds being kept sorted by their
// start). One sort of all four as (time, delta) events was over half of
// the liveness check.
func Starvation(s Streams, end, bound int64, excused []Interval) Starved {
	r := Starved{FirstOver: -1}
	wantFrom, wantTo, holdFrom, holdTo := s.WantFrom, s.WantTo, s.HoldFrom, s.HoldTo
	for _, ts := range [][]int64{wantFrom, wantTo, holdFrom, holdTo} {
		slices.Sort(ts) // the starts are sorted already: a linear pass
	}
	interval := func(start, t int64) {
		if t-start > r.Longest {
			r.Longest, r.From = t-start, start
		}
		stalled := Covered(excused, start, t)
		net := t - start - stalled
		if net > r.Net {
			r.Net, r.NetStall, r.NetFrom = net, stalled, start
		}
		if net > bound && r.FirstOver < 0 {
			r.FirstOver = start
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
