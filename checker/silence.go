package checker

import (
	"slices"

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

// serversSilent is when every observed node was silent (nil: none, or no
// syncs recorded), computed once.
func (a *analysis) serversSilent() []liveness.Interval {
	a.silentOnce.Do(func() {
		byNode := map[string][]*history.Op{}
		var nodes []string
		for _, op := range a.server {
			if op.F != history.FSync || op.Time < op.N {
				continue
			}
			if _, ok := byNode[op.Node]; !ok {
				nodes = append(nodes, op.Node)
			}
			byNode[op.Node] = append(byNode[op.Node], op)
		}
		for i, n := range nodes {
			s := nodeSilences(byNode[n])
			if i == 0 {
				a.silent = s
			} else {
				a.silent = liveness.Intersect(a.silent, s)
			}
		}
	})
	return a.silent
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
