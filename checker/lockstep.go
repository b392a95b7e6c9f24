package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lockstorm/lockstorm/checker/internal/liveness"
	"github.com/lockstorm/lockstorm/history"
)

// lockTry is one contender's try on a key, by the key events: the sets of
// one token on distinct nodes, from its first set to the window's end.
type lockTry struct {
	owner string
	from  int64
	nodes map[string]bool
}

// tries are a key's tries in order of start: a set whose token has a try
// begun within the window before it joins that try; any other set begins
// one. A set whose owner the observer could not read joins nothing.
func tries(evs map[string][]*history.Op, within int64) []*lockTry {
	var sets []*history.Op
	for _, node := range evs {
		for _, op := range node {
			if !goneEvent(op.Value) && op.Owner != "" && op.Value != "expire" && op.Value != "persist" {
				sets = append(sets, op)
			}
		}
	}
	slices.SortStableFunc(sets, func(x, y *history.Op) int { return cmp.Compare(x.Time, y.Time) })
	open := map[string]*lockTry{}
	var out []*lockTry
	for _, op := range sets {
		t := open[op.Owner]
		if t == nil || op.Time-t.from > within {
			t = &lockTry{owner: op.Owner, from: op.Time, nodes: map[string]bool{}}
			open[op.Owner] = t
			out = append(out, t)
		}
		t.nodes[op.Node] = true
	}
	return out
}

// lockstepRun is a row of lockstep rounds on one key.
type lockstepRun struct {
	key      string
	from, to int64 // the first and the last round's start
	rounds   int
	owners   int // distinct contenders over the row
	gap      int64
}

// lockstepRuns are kd's rows of at least rounds lockstep rounds: each
// round's tries start within the window of its first, come from two or
// more tokens, none wins a majority of the n nodes, and the round starts
// while nobody holds the key, no node holds another token's key, and
// nothing is excused.
func (a *analysis) lockstepRuns(kd *keyData, evs map[string][]*history.Op, n int, excused []liveness.Interval) []lockstepRun {
	within, rounds := int64(a.opts.LockstepWithin), a.opts.LockstepRounds
	ts := tries(evs, within)
	var out []lockstepRun
	cur := lockstepRun{key: kd.name}
	owners := map[string]bool{}
	end := func() {
		if cur.rounds >= rounds {
			cur.owners = len(owners)
			out = append(out, cur)
		}
		cur, owners = lockstepRun{key: kd.name}, map[string]bool{}
	}
	for i := 0; i < len(ts); {
		j, split, tokens := i, true, map[string]bool{}
		for ; j < len(ts) && ts[j].from-ts[i].from <= within; j++ {
			tokens[ts[j].owner] = true
			split = split && len(ts[j].nodes) < a.need(n)
		}
		at := ts[i].from
		lockstep := split && len(tokens) > 1 && !heldAt(kd, at) && liveness.Covered(excused, at, at+1) == 0 && !strayAt(evs, at, tokens)
		if !lockstep || cur.rounds > 0 && grantedBetween(kd, cur.to, at) {
			end()
		}
		if lockstep {
			if cur.rounds == 0 {
				cur.from = at
			}
			cur.gap = max(cur.gap, ts[j-1].from-at)
			cur.to = at
			cur.rounds++
			for t := range tokens {
				owners[t] = true
			}
		}
		i = j
	}
	end()
	return out
}

// strayAt says some node held, just before t, a key of a token that is
// not one of the round's (or whose owner the observer could not read): a
// holder's release still on its way to a far node, a try whose unwind has
// not landed. The round's contenders then did not split the nodes among
// themselves; a third party's key did, and that is contention, not
// contenders retrying in step.
func strayAt(evs map[string][]*history.Op, t int64, tokens map[string]bool) bool {
	for _, node := range evs {
		var last *history.Op
		for _, op := range node {
			if op.Time >= t {
				break
			}
			if op.Value != "expire" && op.Value != "persist" {
				last = op
			}
		}
		if last != nil && !goneEvent(last.Value) && !tokens[last.Owner] {
			return true
		}
	}
	return false
}

// heldAt says some client held kd at t by its own grant.
func heldAt(kd *keyData, t int64) bool {
	for i := range kd.holds {
		if h := &kd.holds[i]; h.From <= t && t < h.To {
			return true
		}
	}
	return false
}

// grantedBetween says some hold of kd began in (from, to].
func grantedBetween(kd *keyData, from, to int64) bool {
	for i := range kd.holds {
		if h := &kd.holds[i]; h.From > from && h.From <= to {
			return true
		}
	}
	return false
}

// lockstepCheck finds contenders retrying in lockstep.
type lockstepCheck struct{}

func (lockstepCheck) name() string { return "lockstep-retries" }

func (lockstepCheck) run(a *analysis) finding {
	if a.opts.LockstepWithin <= 0 || a.opts.LockstepRounds <= 0 || !a.opts.Quorum || a.events == 0 {
		return lockstepFinding{}
	}
	ks := a.keyStreams()
	excused := liveness.Merge(append(slices.Clone(a.stalls), a.serversSilent()...))
	var f lockstepFinding
	for _, kd := range a.keys {
		for _, r := range a.lockstepRuns(kd, ks.byKey[kd.name], len(ks.nodes), excused) {
			f.runs = append(f.runs, r)
		}
	}
	slices.SortStableFunc(f.runs, func(x, y lockstepRun) int { return cmp.Compare(x.from, y.from) })
	f.within, f.rounds, f.nodes = int64(a.opts.LockstepWithin), a.opts.LockstepRounds, len(ks.nodes)
	return f
}

// lockstepFinding writes the rows of lockstep rounds as a finding; it does
// not change the verdict word.
type lockstepFinding struct {
	runs          []lockstepRun
	within        int64
	rounds, nodes int
}

func (f lockstepFinding) apply(r *Result) {
	if len(f.runs) == 0 {
		return
	}
	w := f.runs[0]
	text := fmt.Sprintf("%d contenders' tries on %s split the %d nodes with no majority %d rounds in a row, from %s to %s, each round's tries starting within %s of each other (window %s, rounds %d), while nobody held the key",
		w.owners, w.key, f.nodes, w.rounds, ms(w.from), ms(w.to), ms(w.gap), ms(f.within), f.rounds)
	r.Findings = append(r.Findings, Finding{Kind: history.KindLockstepRetries, Count: len(f.runs), FirstNs: w.from, Witness: text})
}
