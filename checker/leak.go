package checker

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

// streamSet is every node's stream of key events and syncs, in that node's
// order, computed once for the checks that read them.
type streamSet struct {
	nodes   []string
	streams map[string][]*Op
}

func (a *analysis) nodeStreams() *streamSet {
	a.streamsOnce.Do(func() {
		ss := &streamSet{streams: map[string][]*Op{}}
		for _, op := range a.server {
			if _, ok := ss.streams[op.Node]; !ok {
				ss.nodes = append(ss.nodes, op.Node)
			}
			ss.streams[op.Node] = append(ss.streams[op.Node], op)
		}
		sort.Strings(ss.nodes)
		a.streamSet = ss
	})
	return a.streamSet
}

// ownerRuns walks one node's stream into its owner runs (sets whose owner
// the observer read; an unread set ends the run before it and begins none).
func ownerRuns(node string, evs []*Op) []*ownerRun {
	var out []*ownerRun
	open := map[string]*ownerRun{} // key → its standing run
	prevSync := int64(-1)
	for _, e := range evs {
		if e.F == FSync {
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

// failedAcq is an acquire that ended without a grant.
type failedAcq struct {
	key          string
	client       int
	invoke, done int64
	definite     bool   // a fail completion (not an error reply): the lock said no
	token        string // the token it tried, when the lock named it (lockimpl.AttemptError)
}

// failedAcquires lists the acquires that completed with a fail or an
// unknown outcome, by key.
func (a *analysis) failedAcquires() map[string][]failedAcq {
	out := map[string][]failedAcq{}
	inFlight := map[int]int64{} // process → its acquire's invoke
	for i := range a.h {
		op := &a.h[i]
		if op.F != FAcquire {
			continue
		}
		switch op.Type {
		case Invoke:
			inFlight[op.Process] = op.Time
		case Fail, Info:
			inv, ok := inFlight[op.Process]
			if !ok {
				continue
			}
			delete(inFlight, op.Process)
			if op.ErrorReply {
				continue // the server refused the command: it took nothing
			}
			out[op.Key] = append(out[op.Key], failedAcq{key: op.Key, client: op.Client, invoke: inv, done: op.Time,
				definite: op.Type == Fail, token: op.Value})
		default:
			delete(inFlight, op.Process)
		}
	}
	return out
}

// leak is one leak found: when, and the sentence that tells it.
type leak struct {
	at   int64
	text string
}

// leakResult is what the leak check found, by kind.
type leakResult struct {
	notFreed, lostAcquires, lostUnknown, orphans []leak
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

func checkLeaks(a *analysis) leakResult {
	var res leakResult
	if a.events == 0 || a.stampTokens {
		return res
	}
	owners := a.ownersOf()
	ss := a.nodeStreams()
	byToken := map[[2]string][]*ownerRun{} // (key, token) → its runs on every node
	var order [][2]string
	for _, n := range ss.nodes {
		for _, r := range ownerRuns(n, ss.streams[n]) {
			id := [2]string{r.key, r.token}
			if _, ok := byToken[id]; !ok {
				order = append(order, id)
			}
			byToken[id] = append(byToken[id], r)
		}
	}
	nodes, quorum := len(ss.nodes), a.opts.Quorum

	// Releases acknowledged ok whose key stood as theirs across them.
	for _, r := range a.releases() {
		if r.f != FRelease || r.token == "" || owners[r.token] == ambiguousOwner {
			continue
		}
		runs := byToken[[2]string{r.key, r.token}]
		if len(runs) == 0 {
			continue
		}
		var stood []*ownerRun
		for _, run := range runs {
			if run.setAt < r.invoke && (run.endAt < 0 || run.endAt > r.invoke) {
				stood = append(stood, run)
			}
		}
		if len(stood) == 0 || !standing(stood, nodes, quorum, func(run *ownerRun) bool { return run.covers(r.invoke, r.done) }) {
			continue
		}
		res.notFreed = append(res.notFreed, leak{at: r.invoke, text: fmt.Sprintf(
			"release not freed: c%d's release of %s at %s reported ok, but %s was still c%d's (set at %s on %s) after it completed",
			r.client, r.key, ms(r.invoke), r.key, r.client, ms(stood[0].setAt), stood[0].node)})
	}

	// Tokens nobody was granted, left standing by acquires that failed.
	failed := a.failedAcquires()
	beliefEnd := map[[2]string]int64{} // (key, token) → when its last believer stopped
	for _, kd := range a.keys {
		for _, h := range kd.holds {
			if h.Token == "" || h.End == "end" {
				continue
			}
			end := h.To
			if h.End == "release" && h.relDone >= 0 {
				end = h.relDone
			}
			id := [2]string{kd.name, h.Token}
			beliefEnd[id] = max(beliefEnd[id], end)
		}
	}
	for _, id := range order {
		if _, granted := owners[id[1]]; granted {
			continue
		}
		runs := byToken[id]
		// The acquires that may have sent the set: invoked before it was
		// received, completed after the sync before it was sent.
		// An acquire that named this token as its own (AttemptError) sent
		// it: it alone is the candidate.
		var cands []failedAcq
		for _, f := range failed[id[0]] {
			if f.token == id[1] {
				cands = []failedAcq{f}
				break
			}
			for _, run := range runs {
				if f.invoke < run.setAt && f.done > run.prevSyncN {
					cands = append(cands, f)
					break
				}
			}
		}
		if len(cands) == 0 {
			continue
		}
		last, definite, first := int64(-1), true, cands[0]
		for _, f := range cands {
			last, definite = max(last, f.done), definite && f.definite
		}
		if !standing(runs, nodes, quorum, func(run *ownerRun) bool { return run.maxSyncN > last }) {
			continue
		}
		beliefEnd[id] = last
		how := "failed"
		if !definite {
			how = "ended with an unknown outcome"
		}
		l := leak{at: last, text: fmt.Sprintf("lost acquire: c%d's acquire of %s at %s %s, but its set (%s, at %s on %s) still held %s after it completed",
			first.client, id[0], ms(first.invoke), how, id[1], ms(runs[0].setAt), runs[0].node, id[0])}
		if definite {
			res.lostAcquires = append(res.lostAcquires, l)
		} else {
			res.lostUnknown = append(res.lostUnknown, l)
		}
	}

	// Keys that outlived their last believer by more than the bound.
	if bound := a.opts.OrphanBound.Nanoseconds(); bound > 0 {
		for _, id := range order {
			end, ok := beliefEnd[id]
			if !ok {
				continue
			}
			runs := byToken[id]
			if !standing(runs, nodes, quorum, func(run *ownerRun) bool { return run.maxSyncN-max(end, run.setAt) > bound }) {
				continue
			}
			longest := int64(0)
			for _, run := range runs {
				longest = max(longest, run.maxSyncN-max(end, run.setAt))
			}
			who := "its holder"
			if c, ok := owners[id[1]]; ok && c >= 0 {
				who = fmt.Sprintf("c%d", c)
			}
			res.orphans = append(res.orphans, leak{at: end, text: fmt.Sprintf(
				"orphaned key: %s stayed set to %s's token for at least %s after %s stopped holding it at %s (bound %s)",
				id[0], who, ms(longest), who, ms(end), a.opts.OrphanBound)})
		}
	}
	for _, ls := range [][]leak{res.notFreed, res.lostAcquires, res.lostUnknown, res.orphans} {
		sort.SliceStable(ls, func(i, j int) bool { return ls[i].at < ls[j].at })
	}
	return res
}

// leakCheck finds releases not freed, lost acquires and orphaned keys.
type leakCheck struct{}

func (leakCheck) name() string { return "leaks" }

func (leakCheck) run(a *analysis) finding { return leakFinding{checkLeaks(a)} }

// leakFinding writes the leaks as findings (see findings.go); they do not
// change the verdict word, which keeps its meaning for old specs: they
// fail a run where the expectation does not permit them.
type leakFinding struct{ leakResult }

func (f leakFinding) apply(r *Result) {
	add := func(k Kind, ls []leak) {
		if len(ls) > 0 {
			r.Findings = append(r.Findings, Finding{Kind: k, Count: len(ls), FirstNs: ls[0].at, Witness: ls[0].text})
		}
	}
	add(KindReleaseNotFreed, f.notFreed)
	add(KindLostAcquire, f.lostAcquires)
	add(KindLostAcquireUnknown, f.lostUnknown)
	add(KindOrphanedKey, f.orphans)
}
