package checker

import (
	"fmt"

	"github.com/lockstorm/lockstorm/history"
)

// resourceResult is what the counter resource says.
type resourceResult struct {
	acked, final, lost int64
	stale              int // accepted writes made with a stale view of the counter
	fenceRegressions   int // accepted writes whose fence was not above the last accepted one
	rejected           int
	dups               int
	firstHarm          int64 // invoke time of the first harmful write (or dup fence), -1: none
	harm               string
}

// checkResource counts acknowledged writes against the final value of each
// key's counter, finds the writes made with a stale view of it, and checks
// the fencing order of accepted writes.
//
// The counter starts at 0 and every critical section writes read+1, so on
// a key with no lost update the final value equals its acknowledged writes.
// The final value is the final read (process FinalProcess) or, when a key
// has none, the value of its last acknowledged write (by completion order),
// or 0 without writes. LostUpdates is net, summed over keys as is: an
// unknown write that landed makes a key's difference negative, which is
// reported, not masked; and one stale write of 1 over 60 counts 60 there.
//
// A stale write is counted once per event, whatever it overwrote: an
// acknowledged write of v = read+1 is stale when the latest acknowledged
// write of the key before it (by completion order) had already stored v or
// more, that is, the value the writer read was older than what the counter
// held when it wrote. Rejected writes are not stale writes: the resource
// refused them.
//
// A write accepted (ok) with a fence (> 0) that is not strictly greater than
// the greatest fence accepted earlier on the key (by completion order) is a
// fence regression — except a repeat of that same fence by the same client,
// which is one holder writing twice inside one critical section.
func checkResource(a *analysis) resourceResult {
	r := resourceResult{firstHarm: -1}
	harm := func(t int64, what string) {
		if r.firstHarm < 0 || t < r.firstHarm {
			r.firstHarm, r.harm = t, what
		}
	}
	for _, kd := range a.keys {
		var acked, lastN, maxFence int64
		maxClient := 0
		wrote := false
		for i := range kd.writes {
			w := &kd.writes[i]
			switch history.TypeOfCode(w.typ) {
			case history.Fail:
				r.rejected++
			case history.Ok:
				acked++
				if wrote && w.n <= lastN {
					r.stale++
					harm(w.invoke, fmt.Sprintf("c%d (p%d) wrote %d over %d on %s at %s", w.client, w.process, w.n, lastN, kd.name, ms(w.invoke)))
				}
				lastN, wrote = w.n, true
				if w.fence > 0 {
					switch {
					case w.fence > maxFence:
						maxFence, maxClient = w.fence, w.client
					case w.fence == maxFence && w.client == maxClient:
					default:
						r.fenceRegressions++
						harm(w.invoke, fmt.Sprintf("c%d (p%d) wrote %s with fence %d after fence %d was accepted at %s",
							w.client, w.process, kd.name, w.fence, maxFence, ms(w.invoke)))
					}
				}
			}
		}
		final := lastN
		if kd.hasFinal {
			final = kd.final
		}
		r.acked += acked
		r.final += final
		r.lost += acked - final
		if kd.dups > 0 {
			r.dups += kd.dups
			harm(kd.dupAt, fmt.Sprintf("a fencing token on %s was issued to two processes (%s)", kd.name, ms(kd.dupAt)))
		}
	}
	return r
}

// resourceCheck judges the counter resource: lost updates, stale writes,
// fencing.
type resourceCheck struct{}

func (resourceCheck) name() string { return "resource" }

func (resourceCheck) run(a *analysis) finding { return checkResource(a) }

func (rr resourceResult) apply(r *Result) {
	r.AckedWrites, r.FinalValue, r.NetLostUpdates = rr.acked, rr.final, rr.lost
	r.StaleWrites, r.FenceRegressions, r.Rejected, r.DupFences = rr.stale, rr.fenceRegressions, rr.rejected, rr.dups
	r.Harm = rr.harm
}

func (rr resourceResult) firstViolation() (int64, string) { return rr.firstHarm, ViolationHarm }
