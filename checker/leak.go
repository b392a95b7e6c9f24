package checker

import (
	"sort"

	"github.com/lockstorm/lockstorm/checker/internal/keyevents"
	"github.com/lockstorm/lockstorm/history"
)

// Leaks: a release that did not free its key, a lost acquire, an orphaned
// key, read from the servers' key events and the observers' syncs. The
// judgement is checker/internal/keyevents's (leak.go there tells the
// rules); this file hands it the pass's records and writes its findings.

// keyEventInput is what both judgements by the servers' events read: every
// node's stream of key events and syncs, in that node's order (computed
// once), the releases and extends acknowledged ok, the owners and the
// options'. Each check adds what it alone reads.
func (a *analysis) keyEventInput() *keyevents.Input {
	a.streamsOnce.Do(func() {
		ss := &streamSet{streams: map[string][]*keyevents.Event{}}
		evs := make([]keyevents.Event, len(a.server))
		for i, op := range a.server {
			evs[i] = keyevents.Event{Time: op.Time, Sync: op.F == history.FSync, N: op.N, Node: op.Node, Key: op.Key, Value: op.Value, Owner: op.Owner}
			if _, ok := ss.streams[op.Node]; !ok {
				ss.nodes = append(ss.nodes, op.Node)
			}
			ss.streams[op.Node] = append(ss.streams[op.Node], &evs[i])
		}
		sort.Strings(ss.nodes)
		a.streamSet = ss
	})
	return &keyevents.Input{Nodes: a.streamSet.nodes, Streams: a.streamSet.streams, Releases: a.releases(),
		Owners: a.ownersOf(), StampTokens: a.stampTokens}
}

// streamSet is every node's stream of key events and syncs, in that node's
// order, computed once for the checks that read them.
type streamSet struct {
	nodes   []string
	streams map[string][]*keyevents.Event
}

// beliefEnds is when the last client that believed in each (key, token)
// stopped: its hold's release completed, or its hold ended otherwise
// (crash, abandon), holds running to the end of the history aside.
func (a *analysis) beliefEnds() map[[2]string]int64 {
	beliefEnd := map[[2]string]int64{}
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
	return beliefEnd
}

// failedAcquires lists the acquires that completed with a fail or an
// unknown outcome, by key.
func (a *analysis) failedAcquires() map[string][]keyevents.FailedAcquire {
	out := map[string][]keyevents.FailedAcquire{}
	inFlight := map[int]int64{} // process → its acquire's invoke
	for i := range a.h {
		op := &a.h[i]
		if op.F != history.FAcquire {
			continue
		}
		switch op.Type {
		case history.Invoke:
			inFlight[op.Process] = op.Time
		case history.Fail, history.Info:
			inv, ok := inFlight[op.Process]
			if !ok {
				continue
			}
			delete(inFlight, op.Process)
			if op.ErrorReply {
				continue // the server refused the command: it took nothing
			}
			out[op.Key] = append(out[op.Key], keyevents.FailedAcquire{Key: op.Key, Client: op.Client, Invoke: inv, Done: op.Time,
				Definite: op.Type == history.Fail, Token: op.Value})
		default:
			delete(inFlight, op.Process)
		}
	}
	return out
}

// leakCheck finds releases not freed, lost acquires and orphaned keys.
type leakCheck struct{}

func (leakCheck) name() string { return "leaks" }

func (leakCheck) run(a *analysis) finding {
	if a.events == 0 || a.stampTokens {
		return leakFinding{}
	}
	in := a.keyEventInput()
	in.Quorum, in.OrphanBound = a.opts.Quorum, a.opts.OrphanBound
	in.Failed, in.BeliefEnd = a.failedAcquires(), a.beliefEnds()
	return leakFinding{keyevents.Leaks(in)}
}

// leakFinding writes the leaks as findings (see findings.go); they do not
// change the verdict word, which keeps its meaning for old specs: they
// fail a run where the expectation does not permit them.
type leakFinding struct{ keyevents.LeakResult }

func (f leakFinding) apply(r *Result) {
	add := func(k history.Kind, ls []keyevents.Leak) {
		if len(ls) > 0 {
			r.Findings = append(r.Findings, Finding{Kind: k, Count: len(ls), FirstNs: ls[0].At, Witness: ls[0].Text})
		}
	}
	add(history.KindReleaseNotFreed, f.NotFreed)
	add(history.KindLostAcquire, f.LostAcquires)
	add(history.KindLostAcquireUnknown, f.LostUnknown)
	add(history.KindOrphanedKey, f.Orphans)
}
