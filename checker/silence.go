package checker

import (
	"slices"
	"time"

	"github.com/lockstorm/lockstorm/checker/internal/liveness"
	"github.com/lockstorm/lockstorm/history"
)

// The servers' silences. An observer sends PING to its node every few
// milliseconds on a connection of its own, outside every proxy, and records
// the reply as an FSync entry (sent at N, answered at Time). A node that
// leaves a PING unanswered answered nothing to anyone meanwhile (Redis
// answers one connection at a time, in order): it was stopped, or the
// machine gave it no CPU. Past a node's usual round trip (the tenth
// percentile of its syncs' round trips, so that a silence over most of a
// short run does not count as usual, and what a delayed observer adds
// counts for nothing), a sync's wait is a silence of that node. A sync
// never answered (the observer records a sync only on its reply) proves
// nothing: its node may have been killed by the scenario, whose fault the
// lock is judged on, not silenced by the machine.
//
// While every node was silent no lock could grant anything: a starvation
// that is within the deadlock bound net of those moments (and of the
// harness's own stalls) is the servers', not the lock's, and the run is
// inconclusive with that reason (see verdict), never a deadlock.

// serversSilent is when every node the lock's keys were seen on (every
// observed node, when the key events name none) was silent or gone, and
// not all of them gone (nil: none, or no syncs recorded), computed once.
func (a *analysis) serversSilent() []liveness.Interval {
	a.silentOnce.Do(func() {
		byNode := map[string][]*history.Op{}
		var nodes []string
		used := map[string]bool{}
		for _, op := range a.server {
			if op.F == history.FServer {
				used[op.Node] = true
			}
			if op.F != history.FSync || op.Time < op.N {
				continue
			}
			if _, ok := byNode[op.Node]; !ok {
				nodes = append(nodes, op.Node)
			}
			byNode[op.Node] = append(byNode[op.Node], op)
		}
		// A node is silent, or gone (no sync recorded: killed, or its
		// observer cut off), or answering. Every node silent or gone, and
		// not every one gone, is a moment no lock could grant and the
		// machine's doing: a node the scenario killed can grant nothing,
		// but its silence is the fault under test (every one gone), not
		// the machine's, and must not keep the others' silence from
		// counting (seen possible on failover and dead-node scenarios:
		// with one node gone for good the intersection was always empty).
		// Only the nodes the lock's keys were seen on count, when some
		// were: a single-instance lock on n1 of five masters waits on n1
		// alone, and n2-n5 answering their observers grants it nothing.
		if len(used) > 0 {
			nodes = slices.DeleteFunc(nodes, func(n string) bool { return !used[n] })
		}
		var allGone []liveness.Interval
		for i, n := range nodes {
			gone := nodeGone(byNode[n], a.end)
			s := liveness.Merge(append(nodeSilences(byNode[n]), gone...))
			if i == 0 {
				a.silent, allGone = s, gone
			} else {
				a.silent, allGone = liveness.Intersect(a.silent, s), liveness.Intersect(allGone, gone)
			}
		}
		var out []liveness.Interval
		for _, iv := range a.silent {
			out = liveness.AppendMinus(out, iv, allGone)
		}
		a.silent = out
	})
	return a.silent
}

// goneAfter is how long an observer may go without a sync of its node
// before the node counts as gone: a few of its 20 ms ticks. A node that is
// up and silent leaves no such gap (its syncs pile up and are answered,
// late, when it runs again: a silence); one that is down, or whose
// observer lost its connection, answers none.
const goneAfter = 100 * time.Millisecond

// nodeGone are the spans in which node's observer recorded no sync for
// longer than goneAfter (from one sync's reply to the next one's send, or
// to end), in time order.
func nodeGone(syncs []*history.Op, end int64) []liveness.Interval {
	var out []liveness.Interval
	last := int64(-1)
	for _, op := range syncs {
		if last >= 0 && op.N-last > int64(goneAfter) {
			out = append(out, liveness.Interval{From: last, To: op.N})
		}
		last = max(last, op.Time)
	}
	if last >= 0 && end-last > int64(goneAfter) {
		out = append(out, liveness.Interval{From: last, To: end})
	}
	return liveness.Merge(out)
}

// nodeSilences are one node's silences, from its syncs in the order
// received (merged).
func nodeSilences(syncs []*history.Op) []liveness.Interval {
	rtts := make([]int64, 0, len(syncs))
	for _, op := range syncs {
		rtts = append(rtts, op.Time-op.N)
	}
	slices.Sort(rtts)
	usual := rtts[len(rtts)/10]
	var out []liveness.Interval
	for _, op := range syncs {
		if from := op.N + usual; op.Time > from {
			out = append(out, liveness.Interval{From: from, To: op.Time})
		}
	}
	return liveness.Merge(out)
}
