package checker

import "fmt"

// resourceResult is what the counter resource says.
type resourceResult struct {
	acked, final, lost int64
	stale, rejected    int
	dups               int
	firstHarm          int64 // invoke time of the first harmful write (or dup fence), -1: none
	harm               string
}

// checkResource counts acknowledged writes against the final value of each
// key's counter, and checks the fencing order of accepted writes.
//
// The counter starts at 0 and every critical section writes read+1, so on
// a key with no lost update the final value equals its acknowledged writes.
// The final value is the final read (process FinalProcess) or, when a key
// has none, the value of its last acknowledged write (by completion order),
// or 0 without writes. LostUpdates is summed over keys as is: an unknown
// write that landed makes a key's difference negative, which is reported,
// not masked.
//
// A write accepted (ok) with a fence (> 0) that is not strictly greater than
// the greatest fence accepted earlier on the key (by completion order) is
// stale — except a repeat of that same fence by the same client, which is
// one holder writing twice inside one critical section (a reentrant hold).
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
		overwrite := int64(-1)
		overwriteWhat := ""
		for i := range kd.writes {
			w := &kd.writes[i]
			switch w.typ {
			case Fail:
				r.rejected++
			case Ok:
				acked++
				if w.n <= lastN && overwrite < 0 {
					overwrite = w.invoke
					overwriteWhat = fmt.Sprintf("c%d (p%d) wrote %d over %d on %s at %s", w.client, w.process, w.n, lastN, kd.name, ms(w.invoke))
				}
				lastN = w.n
				if w.fence > 0 {
					switch {
					case w.fence > maxFence:
						maxFence, maxClient = w.fence, w.client
					case w.fence == maxFence && w.client == maxClient:
					default:
						r.stale++
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
		if acked-final > 0 && overwrite >= 0 {
			harm(overwrite, overwriteWhat)
		}
		if kd.dups > 0 {
			r.dups += kd.dups
			harm(kd.dupAt, fmt.Sprintf("a fencing token on %s was issued to two processes (%s)", kd.name, ms(kd.dupAt)))
		}
	}
	return r
}
