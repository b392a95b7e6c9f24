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
	return " (steps " + CompressSteps(h.Steps) + ")"
}

// CompressSteps joins failpoint names with arrows, folding a polling loop
// (the same few steps repeated back to back) into "(a → b → c) ×n", so a
// witness stays one readable line however long the client waited.
func CompressSteps(steps []string) string {
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
