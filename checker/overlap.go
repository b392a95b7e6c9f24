package checker

import (
	"container/heap"
	"fmt"
	"sort"
	"strings"
)

// overlaps reports whether two holds of one key overlap: strictly, so a hold
// that ends exactly when the next begins is a clean hand-off.
func overlaps(a, b *Hold) bool { return a.From < b.To && b.From < a.To }

// toHeap is a min-heap of hold indices by To.
type toHeap struct {
	idx   []int
	holds []holdRec
}

func (h *toHeap) Len() int           { return len(h.idx) }
func (h *toHeap) Less(i, j int) bool { return h.holds[h.idx[i]].To < h.holds[h.idx[j]].To }
func (h *toHeap) Swap(i, j int)      { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *toHeap) Push(x any)         { h.idx = append(h.idx, x.(int)) }
func (h *toHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}

// keyOverlaps is the overlap pass's result on one key.
type keyOverlaps struct {
	pairs   int
	flagged []bool // hold i overlaps some other hold
	witness *Witness
}

// overlapPass sweeps one key's holds in order of From with a heap of the
// open ones by To: O(n log n + pairs). It counts overlapping pairs, marks
// every hold in one, and names the earliest overlap: the first hold B that
// begins while another A is open, paired with the open hold that began
// first.
func overlapPass(kd *keyData) keyOverlaps {
	hs := kd.holds
	if !sort.SliceIsSorted(hs, func(i, j int) bool { return hs[i].From < hs[j].From }) {
		sort.SliceStable(hs, func(i, j int) bool { return hs[i].From < hs[j].From })
	}
	r := keyOverlaps{}
	open := &toHeap{holds: hs}
	var unflagged []int // open holds not yet marked
	for j := range hs {
		b := &hs[j].Hold
		for open.Len() > 0 && hs[open.idx[0]].To <= b.From {
			heap.Pop(open)
		}
		n := open.Len()
		if n > 0 && b.To == b.From { // zero-length: only those begun strictly before count
			n = 0
			for _, i := range open.idx {
				if hs[i].From < b.To {
					n++
				}
			}
		}
		if n > 0 {
			if r.flagged == nil {
				r.flagged = make([]bool, len(hs))
			}
			r.pairs += n
			r.flagged[j] = true
			keep := unflagged[:0]
			for _, i := range unflagged {
				switch {
				case hs[i].To <= b.From:
				case overlaps(&hs[i].Hold, b):
					r.flagged[i] = true
				default:
					keep = append(keep, i)
				}
			}
			unflagged = keep
			if r.witness == nil {
				a := -1
				for _, i := range open.idx {
					if overlaps(&hs[i].Hold, b) && (a < 0 || hs[i].From < hs[a].From ||
						hs[i].From == hs[a].From && hs[i].Process < hs[a].Process) {
						a = i
					}
				}
				r.witness = newWitness(&hs[a].Hold, b)
			}
		}
		heap.Push(open, j)
		if r.flagged == nil || !r.flagged[j] {
			unflagged = append(unflagged, j)
		}
	}
	return r
}

func ms(ns int64) string { return fmt.Sprintf("%.1f ms", float64(ns)/1e6) }

func steps(h *Hold) string {
	if len(h.Steps) == 0 {
		return ""
	}
	return " (steps " + compressSteps(h.Steps) + ")"
}

// compressSteps joins failpoint names with arrows, folding a polling loop
// (the same few steps repeated back to back) into "(a → b → c) ×n", so a
// witness stays one readable line however long the client waited.
func compressSteps(steps []string) string {
	var parts []string
	for i := 0; i < len(steps); {
		best, bestReps := 1, 1
		for p := 1; p <= 4 && i+2*p <= len(steps); p++ {
			reps := 1
			for i+(reps+1)*p <= len(steps) && equalRun(steps[i:i+p], steps[i+reps*p:i+(reps+1)*p]) {
				reps++
			}
			if reps > 1 && reps*p > bestReps*best {
				best, bestReps = p, reps
			}
		}
		if bestReps > 1 {
			parts = append(parts, fmt.Sprintf("(%s) ×%d", strings.Join(steps[i:i+best], " → "), bestReps))
			i += best * bestReps
			continue
		}
		parts = append(parts, steps[i])
		i++
	}
	return strings.Join(parts, " → ")
}

func equalRun(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func ending(h *Hold) string {
	switch h.End {
	case "crash":
		return " (crashed)"
	case "end":
		return " (the end of the history)"
	}
	return ""
}

// newWitness describes a, which began first, and b overlapping.
func newWitness(a, b *Hold) *Witness {
	w := &Witness{Key: a.Key, A: *a, B: *b, FromNs: max(a.From, b.From), ToNs: min(a.To, b.To)}
	w.Text = fmt.Sprintf("c%d (p%d) held %s from %s%s to %s%s, and c%d (p%d) acquired it at %s%s while it did, "+
		"holding it to %s%s: both held %s from %s to %s.",
		a.Client, a.Process, a.Key, ms(a.From), steps(a), ms(a.To), ending(a),
		b.Client, b.Process, ms(b.From), steps(b), ms(b.To), ending(b),
		a.Key, ms(w.FromNs), ms(w.ToNs))
	return w
}

// Span is one overlap cluster on a key: holds chained by overlapping each
// other (merged as intervals are), from the first moment two of them were
// held at once to the last.
type Span struct {
	Key    string `json:"key"`
	FromNs int64  `json:"from_ns"`
	ToNs   int64  `json:"to_ns"`
	// OverlapNs is the time within the cluster during which two or more
	// holds were open; Holds how many holds the cluster merged.
	OverlapNs int64 `json:"overlap_ns"`
	Holds     int   `json:"holds"`
}

// mergedOverlaps merges one key's holds into clusters as intervals are
// merged, with the overlap rule of overlaps (strict: a hold that ends when
// the next begins is a clean hand-off), and returns the clusters of two or
// more holds, in order. One long stale hold across sixty short ones is one
// cluster (sixty pairs for the overlap pass).
func mergedOverlaps(kd *keyData) []Span {
	hs := make([]*Hold, len(kd.holds))
	for i := range kd.holds {
		hs[i] = &kd.holds[i].Hold
	}
	// By From, then shortest first: a zero-length hold at t does not
	// overlap a hold that begins at t.
	sort.SliceStable(hs, func(i, j int) bool {
		if hs[i].From != hs[j].From {
			return hs[i].From < hs[j].From
		}
		return hs[i].To < hs[j].To
	})
	var out []Span
	for i := 0; i < len(hs); {
		j, end := i+1, hs[i].To
		for ; j < len(hs) && hs[j].From < end; j++ {
			end = max(end, hs[j].To)
		}
		if j-i >= 2 {
			out = append(out, clusterSpan(kd.name, hs[i:j]))
		}
		i = j
	}
	return out
}

// clusterSpan measures one cluster: where and for how long two or more of
// its holds were open at once.
func clusterSpan(key string, hs []*Hold) Span {
	type ev struct {
		t int64
		d int
	}
	evs := make([]ev, 0, 2*len(hs))
	var points []int64
	for _, h := range hs {
		if h.To > h.From {
			evs = append(evs, ev{h.From, 1}, ev{h.To, -1})
		} else {
			points = append(points, h.From)
		}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	sp := Span{Key: key, FromNs: -1, Holds: len(hs)}
	mark := func(from, to int64) {
		if sp.FromNs < 0 || from < sp.FromNs {
			sp.FromNs = from
		}
		sp.ToNs = max(sp.ToNs, to)
	}
	open, start := 0, int64(0)
	for i := 0; i < len(evs); {
		t, before := evs[i].t, open
		for ; i < len(evs) && evs[i].t == t; i++ {
			open += evs[i].d
		}
		switch {
		case before < 2 && open >= 2:
			start = t
		case before >= 2 && open < 2:
			sp.OverlapNs += t - start
			mark(start, t)
		}
	}
	// A zero-length hold in a cluster lies strictly inside another hold:
	// an overlap of no length at its instant.
	for _, t := range points {
		mark(t, t)
	}
	return sp
}

// overlapCheck counts the overlapping holds, measures their clusters and
// names the witness: the earliest overlap, on the first key by name.
type overlapCheck struct{}

func (overlapCheck) name() string { return "mutual exclusion (overlap)" }

func (overlapCheck) run(a *analysis) finding {
	var f overlapFinding
	for k, kd := range a.keys {
		ov := a.overlaps()[k]
		f.pairs += ov.pairs
		if ov.pairs > 0 {
			for _, s := range mergedOverlaps(kd) {
				f.intervals++
				f.ns += s.OverlapNs
				f.spans = append(f.spans, s)
			}
		}
		f.holds += len(kd.holds)
		if w := ov.witness; w != nil && (f.witness == nil || w.FromNs < f.witness.FromNs ||
			w.FromNs == f.witness.FromNs && w.Key < f.witness.Key) {
			f.witness = w
		}
	}
	sort.SliceStable(f.spans, func(i, j int) bool { return f.spans[i].FromNs < f.spans[j].FromNs })
	if len(f.spans) > MaxSpans {
		f.spans = f.spans[:MaxSpans]
	}
	return f
}

// overlapFinding is the overlap pass over every key.
type overlapFinding struct {
	pairs, intervals, holds int
	ns                      int64
	spans                   []Span
	witness                 *Witness
}

func (f overlapFinding) apply(r *Result) {
	r.Overlaps, r.OverlapIntervals, r.OverlapNs, r.OverlapSpans = f.pairs, f.intervals, f.ns, f.spans
	r.Holds, r.Witness = f.holds, f.witness
}

func (f overlapFinding) firstViolation() (int64, string) {
	if f.witness == nil {
		return -1, ""
	}
	return f.witness.FromNs, ViolationOverlap
}
