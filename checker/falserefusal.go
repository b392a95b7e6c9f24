package checker

import (
	"github.com/lockstorm/lockstorm/checker/internal/keyevents"
	"github.com/lockstorm/lockstorm/history"
)

// False refusals: a release or an extend answered with a definite "not
// held" while, by the servers' key events, the key stood as the caller's
// on every node throughout (keyevents.FalseRefusals: certain orderings
// only). The caller gives up a lease it still has, and the key leaks until
// its TTL: redis-py's release that forgets its token before its round trip
// (catalogue 27) answers so when asked again after a lost reply.
type falseRefusalCheck struct{}

func (falseRefusalCheck) name() string { return "false refusal" }

func (falseRefusalCheck) run(a *analysis) finding {
	if a.events == 0 || len(a.refusalRefs) == 0 {
		return falseRefusalFinding{}
	}
	in := a.keyEventInput()
	in.Refusals = a.releasesOf(a.refusalRefs)
	return falseRefusalFinding{found: keyevents.FalseRefusals(in)}
}

// falseRefusalFinding is the refusals found false, in order of time.
type falseRefusalFinding struct{ found []keyevents.FalseRefusal }

func (f falseRefusalFinding) apply(r *Result) {
	if len(f.found) == 0 {
		return
	}
	r.FalseRefusals = len(f.found)
	r.Findings = append(r.Findings, Finding{Kind: history.KindFalseRefusal, Count: len(f.found), FirstNs: f.found[0].At, Witness: f.found[0].Text})
}
