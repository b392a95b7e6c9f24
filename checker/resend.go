package checker

import (
	"fmt"
	"slices"

	"github.com/lockstorm/lockstorm/checker/internal/liveness"
	"github.com/lockstorm/lockstorm/history"
)

// Release retries: within one release, a client sent a command to a node
// again after that node had answered the same command definitively
// (history.FResend, recorded by the client's hooks or relays, which see
// what reaches the client). The node said all it can say; asking again
// learns something only if something changed on the way, so a resend is
// judged only when no fault named the client or the node from the answered
// command's send to the resend. And only when the resend came no sooner
// after the answer than the answer came after its command: a lock that
// stopped waiting for a reply (its own node timeout) and resent at once may
// have decided before the answer arrived (seen: the built-in redlock's
// second release round on a loaded machine, the late reply landing 0.1 ms
// before the round); one that waited at least a round trip more with the
// answer in hand did not. Nor when the harness stalled, the client lagged
// or every server was silent for at least half of the answer's wait: the
// hook sees the reply in go-redis's goroutine, and a lock whose own node
// timeout fired in the stall (its timer and the reply ready at once) never
// had it (seen: the built-in redlock on redlock-clock-jump-random, an
// answer 62 ms after its command across four stalls of 10-24 ms, the
// resend 65 ms after it). Half, because a node timeout is longer than the
// round trip it waits for (redlock's is at least ten of them): a wait
// that stalls did not double took no longer than an unstalled one, and
// the lock had its answer. Any stall at all would not do: the servers'
// silences are measured past each node's usual round trip, so a sync a
// tenth of a millisecond slow is one (seen: node-redlock beta.2's known
// resends excused by a 0.1 ms silence in a 2.8 ms answer). No threshold of time: one such resend is the
// finding (a retry loop that counts a release's "not held" as a vote
// against retries for its whole window, node-redlock's issue 313).

// nodeFaultOp follows the nemesis's faults by the nodes they name, as
// pauseOp does by the clients.
func (a *analysis) nodeFaultOp(op *history.Op) {
	switch {
	case op.F == history.FStart && op.Type == history.Ok && op.Targets != nil && len(op.Targets.Nodes) > 0:
		if a.nodeFaulting == nil {
			a.nodeFaulting, a.nodeFaulted = map[int64]openFault[string]{}, map[string][]liveness.Interval{}
		}
		a.nodeFaulting[op.N] = openFault[string]{op.Time, op.Targets.Nodes}
	case op.F == history.FStop && a.nodeFaulting != nil:
		closeFault(a.nodeFaulting, a.nodeFaulted, op)
	}
}

// faultedBetween says a fault named client or node at some moment of
// [from, to]: a fault still open at the history's end counts as lasting.
func (a *analysis) faultedBetween(client int, node string, from, to int64) bool {
	meets := func(ivs []liveness.Interval) bool {
		for _, iv := range ivs {
			if iv.From <= to && iv.To >= from {
				return true
			}
		}
		return false
	}
	if meets(a.faulted[client]) || meets(a.nodeFaulted[node]) {
		return true
	}
	return stillOpen(a.faulting, client, to) || stillOpen(a.nodeFaulting, node, to)
}

// stillOpen says a fault begun by to and never healed named target.
func stillOpen[K comparable](open map[int64]openFault[K], target K, to int64) bool {
	for _, f := range open {
		if f.from <= to && slices.Contains(f.targets, target) {
			return true
		}
	}
	return false
}

// releaseRetriesCheck finds the resends no fault explains.
type releaseRetriesCheck struct{}

func (releaseRetriesCheck) name() string { return "release retries" }

func (releaseRetriesCheck) run(a *analysis) finding {
	var f releaseRetriesFinding
	for _, i := range a.resends {
		op := &a.h[i]
		sent, answered := op.Fence, op.N
		if a.faultedBetween(op.Client, op.Node, sent, op.Time) || op.Time-answered < answered-sent || 2*a.lateOrSilentFor(op.Client, sent, answered) >= answered-sent {
			f.excused++
			continue
		}
		if f.count++; f.count == 1 {
			f.at = op.Time
			f.witness = fmt.Sprintf("c%d's release of %s sent %s to %s again at %s, though %s had answered it at %s with no fault between",
				op.Client, op.Key, op.Value, op.Node, ms(op.Time), op.Node, ms(op.N))
		}
	}
	return f
}

// releaseRetriesFinding counts the resends judged, the first with its
// witness, and those excused (a fault, or a resend that may have been
// decided before the answer came).
type releaseRetriesFinding struct {
	count, excused int
	at             int64
	witness        string
}

func (f releaseRetriesFinding) apply(r *Result) {
	r.ReleaseResends, r.ReleaseResendsExcused = f.count, f.excused
	if f.count > 0 {
		r.Findings = append(r.Findings, Finding{Kind: history.KindReleaseRetries, Count: f.count, FirstNs: f.at, Witness: f.witness})
	}
}
