package keyevents

import (
	"fmt"
	"sort"
)

// Leaks: the wrongs that leave a key standing with nobody who believes in
// it. Three kinds, all read from the servers' key events and the
// observers' syncs (the false-success check's ground truth, see
// falsesuccess.go), and all concluded only from orderings that are certain:
//
//   - a release not freed: a release acknowledged ok whose key, set to the
//     releaser's token before the release was invoked, was still that token
//     when a sync sent after the release completed was answered. The release
//     ran between the two, so it did not free the key (it stays until its
//     TTL, and every waiter waits for it).
//   - a lost acquire: a key set to a token no acquire was granted with,
//     while the only acquires that could have sent it ended in a failure
//     (or an unknown outcome), and still that token at a sync sent after
//     they all completed: the lock took the key and told its client it had
//     not (or could not say).
//   - an orphaned key: a key that stayed set to a token for longer than
//     Options.OrphanBound after the last client that believed in it stopped
//     believing (its release completed, it crashed, it gave up, or its
//     acquire failed): nobody will release it, and nothing expired it in
//     time.
//
// What makes each certain: a set received before an operation's invoke
// happened before it; a sync whose PING was sent at N and whose reply came
// after the set (and before any entry that ended it) proves the key was
// still that token when the server answered, at N or later. An "owner run"
// is one token's tenure of one key on one node in the stream's order: it
// begins at the set that made the token the owner and ends at the entry that
// ended it (a del, an expiry, a set to another value); maxSyncN is the
// latest PING time of a sync answered during it.
//
// On a quorum lock (Options.Quorum) a key stands as the lock when it stands
// on a majority of the nodes with a stream; on a single-instance lock every
// node on which the token stood at all must agree (a replica lags its
// master, and a killed master answers no sync: only agreement is certain).
// Stamp tokens (Options.StampTokens) name no writer: nothing here is judged.

// ownerRun is one token's tenure of one key on one node.
type ownerRun struct {
	node, key, token string
	// setAt is when the set that began it was received; prevSyncN the PING
	// time of the last sync received before that set (-1: none): the set
	// was executed after prevSyncN.
	setAt, prevSyncN int64
	// endAt is when the entry that ended it was received (-1: never).
	endAt int64
	// maxSyncN is the latest PING time of a sync answered while it stood
	// (-1: none).
	maxSyncN int64
}

// covers says the run stood, by certain ordering, from before t0 to at
// least t1: its set was received before t0, nothing ended it before t0, and
// a sync sent after t1 was answered while it stood.
func (r *ownerRun) covers(t0, t1 int64) bool {
	return r.setAt < t0 && (r.endAt < 0 || r.endAt > t0) && r.maxSyncN > t1
}

// ownerRuns walks one node's stream into its owner runs (sets whose owner
// the observer read; an unread set ends the run before it and begins none).
func ownerRuns(node string, evs []*Event) []*ownerRun {
	var out []*ownerRun
	open := map[string]*ownerRun{} // key → its standing run
	prevSync := int64(-1)
	for _, e := range evs {
		if e.Sync {
			prevSync = max(prevSync, e.N)
			for _, r := range open {
				r.maxSyncN = max(r.maxSyncN, e.N)
			}
			continue
		}
		cur := open[e.Key]
		switch {
		case isEndEvent(e.Value):
		case !isSetEvent(e.Value):
			continue // a TTL change leaves the owner as it was
		case cur != nil && e.Owner == cur.token:
			continue // the same token again (a reentrant count, a renewal by SET)
		}
		if cur != nil {
			cur.endAt = e.Time
			delete(open, e.Key)
		}
		if isSetEvent(e.Value) && e.Owner != "" {
			r := &ownerRun{node: node, key: e.Key, token: e.Owner, setAt: e.Time, prevSyncN: prevSync, endAt: -1, maxSyncN: -1}
			open[e.Key] = r
			out = append(out, r)
		}
	}
	return out
}

// FailedAcquire is an acquire that ended without a grant.
type FailedAcquire struct {
	Key          string
	Client       int
	Invoke, Done int64
	Definite     bool   // a fail completion (not an error reply): the lock said no
	Token        string // the token it tried, when the lock named it (lockimpl.AttemptError)
}

// Leak is one leak found: when, and the sentence that tells it.
type Leak struct {
	At   int64
	Text string
}

// LeakResult is what the leak check found, by kind, each in order of time.
type LeakResult struct {
	NotFreed, LostAcquires, LostUnknown, Orphans []Leak
}

// standing says whether a token's runs make the lock stand, given which of
// them satisfy ok: on a quorum lock a majority of the nodes with a stream;
// otherwise every node on which the token had a run (at least one).
func standing(runs []*ownerRun, nodes int, quorum bool, ok func(*ownerRun) bool) bool {
	yes, had := map[string]bool{}, map[string]bool{}
	for _, r := range runs {
		had[r.node] = true
		if ok(r) {
			yes[r.node] = true
		}
	}
	if quorum {
		return len(yes) > nodes/2
	}
	return len(yes) > 0 && len(yes) == len(had)
}

// tokenRuns are every token's owner runs, across the nodes, by (key,
// token), in the order the tokens first appear; with how the lock stands.
type tokenRuns struct {
	byToken map[[2]string][]*ownerRun
	order   [][2]string
	nodes   int
	quorum  bool
}

func newTokenRuns(in *Input) *tokenRuns {
	tr := &tokenRuns{byToken: map[[2]string][]*ownerRun{}, nodes: len(in.Nodes), quorum: in.Quorum}
	for _, n := range in.Nodes {
		for _, r := range ownerRuns(n, in.Streams[n]) {
			id := [2]string{r.key, r.token}
			if _, ok := tr.byToken[id]; !ok {
				tr.order = append(tr.order, id)
			}
			tr.byToken[id] = append(tr.byToken[id], r)
		}
	}
	return tr
}

// standing says whether id's runs make the lock stand, given which of them
// satisfy ok (see standing).
func (tr *tokenRuns) standing(id [2]string, ok func(*ownerRun) bool) bool {
	return standing(tr.byToken[id], tr.nodes, tr.quorum, ok)
}

// Leaks finds the releases not freed, the lost acquires and the orphaned
// keys (see leak.go). Stamp tokens name no writer: then it finds nothing.
// It only reads in.
func Leaks(in *Input) LeakResult {
	var res LeakResult
	if in.StampTokens {
		return res
	}
	tr := newTokenRuns(in)
	res.NotFreed = notFreed(in, tr)
	var lostEnd map[[2]string]int64
	res.LostAcquires, res.LostUnknown, lostEnd = lostAcquires(in, tr)
	res.Orphans = orphans(in, tr, func(id [2]string) (int64, bool) {
		if end, ok := lostEnd[id]; ok {
			return end, true
		}
		end, ok := in.BeliefEnd[id]
		return end, ok
	})
	for _, ls := range [][]Leak{res.NotFreed, res.LostAcquires, res.LostUnknown, res.Orphans} {
		sort.SliceStable(ls, func(i, j int) bool { return ls[i].At < ls[j].At })
	}
	return res
}

// notFreed: releases acknowledged ok whose key stood as theirs across them.
func notFreed(in *Input, tr *tokenRuns) []Leak {
	var out []Leak
	for _, r := range in.Releases {
		if r.Extend || r.Token == "" || in.Owners[r.Token] == AmbiguousOwner {
			continue
		}
		id := [2]string{r.Key, r.Token}
		var stood []*ownerRun
		for _, run := range tr.byToken[id] {
			if run.setAt < r.Invoke && (run.endAt < 0 || run.endAt > r.Invoke) {
				stood = append(stood, run)
			}
		}
		// Every node with a run of the token must agree, not only those
		// whose set was received before the invoke: a master's set can
		// reach its observer after the release began while a replica's
		// came before it, and the replica alone, lagging behind the
		// master's del, would say the key stood.
		if len(stood) == 0 || !tr.standing(id, func(run *ownerRun) bool { return run.covers(r.Invoke, r.Done) }) {
			continue
		}
		out = append(out, Leak{At: r.Invoke, Text: fmt.Sprintf(
			"release not freed: c%d's release of %s at %s reported ok, but %s was still c%d's (set at %s on %s) after it completed",
			r.Client, r.Key, ms(r.Invoke), r.Key, r.Client, ms(stood[0].setAt), stood[0].node)})
	}
	return out
}

// lostAcquires: tokens nobody was granted, left standing by acquires that
// failed (definite) or ended with an unknown outcome (unknown). end is when
// each such token's last candidate acquire completed: when its last
// believer stopped believing.
func lostAcquires(in *Input, tr *tokenRuns) (definite, unknown []Leak, end map[[2]string]int64) {
	end = map[[2]string]int64{}
	for _, id := range tr.order {
		if _, granted := in.Owners[id[1]]; granted {
			continue
		}
		runs := tr.byToken[id]
		cands := senders(in.Failed[id[0]], id[1], runs)
		if len(cands) == 0 {
			continue
		}
		last, sure, first := int64(-1), true, cands[0]
		for _, f := range cands {
			last, sure = max(last, f.Done), sure && f.Definite
		}
		if !tr.standing(id, func(run *ownerRun) bool { return run.maxSyncN > last }) {
			continue
		}
		end[id] = last
		how := "failed"
		if !sure {
			how = "ended with an unknown outcome"
		}
		l := Leak{At: last, Text: fmt.Sprintf("lost acquire: c%d's acquire of %s at %s %s, but its set (%s, at %s on %s) still held %s after it completed",
			first.Client, id[0], ms(first.Invoke), how, id[1], ms(runs[0].setAt), runs[0].node, id[0])}
		if sure {
			definite = append(definite, l)
		} else {
			unknown = append(unknown, l)
		}
	}
	return definite, unknown, end
}

// senders are the failed acquires that may have sent token's set: invoked
// before it was received, completed after the sync before it was sent. An
// acquire that named this token as its own (AttemptError) sent it: it alone
// is the candidate.
func senders(failed []FailedAcquire, token string, runs []*ownerRun) []FailedAcquire {
	var cands []FailedAcquire
	for _, f := range failed {
		if f.Token == token {
			return []FailedAcquire{f}
		}
		for _, run := range runs {
			if f.Invoke < run.setAt && f.Done > run.prevSyncN {
				cands = append(cands, f)
				break
			}
		}
	}
	return cands
}

// orphans: keys that outlived their last believer (beliefEnd) by more than
// Options.OrphanBound.
func orphans(in *Input, tr *tokenRuns, beliefEnd func([2]string) (int64, bool)) []Leak {
	bound := in.OrphanBound.Nanoseconds()
	if bound <= 0 {
		return nil
	}
	var out []Leak
	for _, id := range tr.order {
		end, ok := beliefEnd(id)
		if !ok || !tr.standing(id, func(run *ownerRun) bool { return run.maxSyncN-max(end, run.setAt) > bound }) {
			continue
		}
		longest := int64(0)
		for _, run := range tr.byToken[id] {
			longest = max(longest, run.maxSyncN-max(end, run.setAt))
		}
		who := "its holder"
		if c, ok := in.Owners[id[1]]; ok && c >= 0 {
			who = fmt.Sprintf("c%d", c)
		}
		out = append(out, Leak{At: end, Text: fmt.Sprintf(
			"orphaned key: %s stayed set to %s's token for at least %s after %s stopped holding it at %s (bound %s)",
			id[0], who, ms(longest), who, ms(end), in.OrphanBound)})
	}
	return out
}
