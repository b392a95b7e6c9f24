package checker

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/lockstorm/lockstorm/checker/internal/liveness"
	"github.com/lockstorm/lockstorm/history"
)

// Needless waiting and lockstep retries: two liveness findings read from
// the recorded history and the servers' key events alone, never from
// knowing the lock, each judged only where the scenario gives its bound
// (Options.WaitBound; Options.LockstepWithin and LockstepRounds).
//
//   - A needless wait: an acquire pending while its key stood free for
//     longer than the wait bound. Free is both: by the key events, the key
//     absent on every observed node (a quorum lock: on a majority), and by
//     the history, no client holding it by its own grant. The time the
//     harness stalled, the waiting client lagged or a fault named it (a
//     pause, a network fault on its links), and every server was silent
//     (silence.go) is not counted: a wait is needless only net of them.
//   - Lockstep retries (quorum locks): a try is one contender's sets (one
//     token) on distinct nodes, the first at its start and the rest within
//     the lockstep window of it; a round is tries of two or more
//     contenders starting within the window of the round's first, none of
//     them winning a majority, at a moment nobody held the key, no node
//     held another token's key, and neither the harness nor every server
//     was stalled. Rounds in a row (any other
//     try, or a grant, ends the row) as many as the lockstep rounds are a
//     finding.

// goneEvent says a key event leaves the key absent on its node.
func goneEvent(ev string) bool {
	switch ev {
	case "del", "expired", "evicted", "rename_from", "move_from":
		return true
	}
	return false
}

// keyStreams are the key events of each key by node, in each node's order,
// and every observed node (with an event or a sync), sorted.
type keyStreams struct {
	nodes []string
	byKey map[string]map[string][]*history.Op
}

func (a *analysis) keyStreams() keyStreams {
	ks := keyStreams{byKey: map[string]map[string][]*history.Op{}}
	seen := map[string]bool{}
	for _, op := range a.server {
		if !seen[op.Node] {
			seen[op.Node] = true
			ks.nodes = append(ks.nodes, op.Node)
		}
		if op.F != history.FServer {
			continue
		}
		m := ks.byKey[op.Key]
		if m == nil {
			m = map[string][]*history.Op{}
			ks.byKey[op.Key] = m
		}
		m[op.Node] = append(m[op.Node], op)
	}
	sort.Strings(ks.nodes)
	return ks
}

// need is how many nodes a grant needs: all of them, or a majority of a
// quorum lock's.
func (a *analysis) need(n int) int {
	if a.opts.Quorum {
		return n/2 + 1
	}
	return n
}

// presence is when kd's key stood on how many nodes: each change, in time
// order (several at one instant summed).
type presence struct {
	at    int64
	delta int
}

func presenceSteps(evs map[string][]*history.Op) []presence {
	var steps []presence
	for _, node := range evs {
		present := false
		for _, op := range node {
			now := !goneEvent(op.Value)
			if now == present {
				continue
			}
			d := 1
			if !now {
				d = -1
			}
			steps = append(steps, presence{op.Time, d})
			present = now
		}
	}
	slices.SortStableFunc(steps, func(x, y presence) int { return cmp.Compare(x.at, y.at) })
	return steps
}

// freeSpans are when kd stood free: absent on as many nodes as a grant
// needs by the key events, and held by nobody by the history. A key the
// servers reported no event of is never judged free: its lock may keep
// its state under another name than the observers watch.
func (a *analysis) freeSpans(kd *keyData, ks keyStreams) []liveness.Interval {
	n := len(ks.nodes)
	if n == 0 || len(ks.byKey[kd.name]) == 0 {
		return nil
	}
	need := a.need(n)
	var free []liveness.Interval
	count, from, isFree := 0, int64(0), true
	steps := presenceSteps(ks.byKey[kd.name])
	for i, s := range steps {
		count += s.delta
		if i+1 < len(steps) && steps[i+1].at == s.at {
			continue
		}
		nowFree := n-count >= need
		if nowFree == isFree {
			continue
		}
		if isFree && s.at > from {
			free = append(free, liveness.Interval{From: from, To: s.at})
		}
		from, isFree = s.at, nowFree
	}
	if isFree && a.end > from {
		free = append(free, liveness.Interval{From: from, To: a.end})
	}
	holds := make([]liveness.Interval, 0, len(kd.holds))
	for i := range kd.holds {
		holds = append(holds, liveness.Interval{From: kd.holds[i].From, To: kd.holds[i].To})
	}
	holds = liveness.Merge(holds)
	var out []liveness.Interval
	for _, f := range free {
		out = liveness.AppendMinus(out, f, holds)
	}
	return out
}

// waitExcused is the time a wait of client does not count: the harness's
// stalls and the client's own lag, the faults that named it (its pauses,
// and a network fault on its links: a try cut off by latency longer than
// the lock's per-node timeout, or a dial the fault refused, leaves no key
// event, so the history cannot tell a waiter that slept from one whose
// every try the fault defeated), and the moments every server was silent.
// Seen: lost-wakeup × redsync (a 200 ms per-node timeout under the
// scenario's 300 ms late replies) waited out the whole fault, each dial
// timed out, and read as a needless wait.
func (a *analysis) waitExcused(client int) []liveness.Interval {
	ex := slices.Clone(a.lateFor(client))
	ex = append(ex, a.faulted[client]...)
	ex = append(ex, a.serversSilent()...)
	return liveness.Merge(ex)
}

// needlessWaitCheck finds acquires pending on a free key past the bound.
type needlessWaitCheck struct{}

func (needlessWaitCheck) name() string { return "needless-wait" }

func (needlessWaitCheck) run(a *analysis) finding {
	bound := int64(a.opts.WaitBound)
	if bound <= 0 || a.events == 0 {
		return waitFinding{}
	}
	ks := a.keyStreams()
	excused := map[int][]liveness.Interval{}
	var f waitFinding
	for _, kd := range a.keys {
		free := a.freeSpans(kd, ks)
		if len(free) == 0 {
			continue
		}
		for _, ac := range kd.acquires {
			ex, ok := excused[ac.client]
			if !ok {
				ex = a.waitExcused(ac.client)
				excused[ac.client] = ex
			}
			w, found := longestWait(ac, a.end, free, ex)
			if !found || w.net <= bound {
				continue
			}
			f.count++
			if f.count == 1 || w.from < f.first.from {
				w.key, w.client, w.need, w.nodes = kd.name, ac.client, a.need(len(ks.nodes)), len(ks.nodes)
				f.first = w
			}
		}
	}
	f.bound = bound
	return f
}

// wait is one acquire's longest stretch pending on a free key.
type wait struct {
	from, to, net int64
	invoke        int64
	key           string
	client        int
	need, nodes   int
}

// longestWait is ac's longest stretch on one free span, net of excused.
func longestWait(ac acqRec, end int64, free, excused []liveness.Interval) (wait, bool) {
	to := ac.done
	if to < 0 {
		to = end
	}
	i := sort.Search(len(free), func(i int) bool { return free[i].To > ac.invoke })
	var best wait
	found := false
	for ; i < len(free) && free[i].From < to; i++ {
		lo, hi := max(free[i].From, ac.invoke), min(free[i].To, to)
		if hi <= lo {
			continue
		}
		net := hi - lo - liveness.Covered(excused, lo, hi)
		if !found || net > best.net {
			best, found = wait{from: lo, to: hi, net: net, invoke: ac.invoke}, true
		}
	}
	return best, found
}

// waitFinding writes the needless waits as a finding; it does not change
// the verdict word.
type waitFinding struct {
	count int
	first wait
	bound int64
}

func (f waitFinding) apply(r *Result) {
	if f.count == 0 {
		return
	}
	w := f.first
	where := "every node"
	if w.need < w.nodes {
		where = fmt.Sprintf("a majority (%d of %d nodes)", w.need, w.nodes)
	}
	text := fmt.Sprintf("c%d's acquire on %s (invoked at %s) waited from %s to %s while the key was absent on %s and nobody held it: %s net of the harness's stalls, the client's lag, the faults that named it and the servers' silences (bound %s)",
		w.client, w.key, ms(w.invoke), ms(w.from), ms(w.to), where, ms(w.net), ms(f.bound))
	r.Findings = append(r.Findings, Finding{Kind: history.KindNeedlessWait, Count: f.count, FirstNs: w.from, Witness: text})
}
