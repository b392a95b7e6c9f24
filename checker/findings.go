package checker

import "slices"

// Kind is one kind of wrong a lock can show. A run's result lists each kind
// it showed as a Finding; an expectation says which kinds a lock may show in
// a scenario (the rest fail the run wherever they appear, even inside a run
// whose overlap was expected).
type Kind string

// The kinds, in the order Result.Findings lists them.
const (
	// KindTwoHolders: two clients held one key at once (by their own
	// definite grants), not explained by the harness's own stalls.
	KindTwoHolders Kind = "two-holders"
	// KindHarm: the resource was harmed: a stale write, a fence that went
	// back, a fence granted twice, or updates lost.
	KindHarm Kind = "harm"
	// KindReleaseFalseSuccess: a release acknowledged ok on a key that, by
	// the servers' events, was already gone or someone else's.
	KindReleaseFalseSuccess Kind = "release-false-success"
	// KindExtendFalseSuccess: an extend or a watchdog's renewal
	// acknowledged ok on a key that was not the extender's (a foreign
	// renewal, one that extended another holder's key, included).
	KindExtendFalseSuccess Kind = "extend-false-success"
	// KindReleaseNotFreed: a release acknowledged ok whose key stood as the
	// releaser's across it.
	KindReleaseNotFreed Kind = "release-not-freed"
	// KindLostAcquire: an acquire that reported a definite failure while
	// its set landed and held the key after it returned.
	KindLostAcquire Kind = "lost-acquire"
	// KindLostAcquireUnknown: the same after an acquire whose outcome was
	// unknown (a lost reply): honest, but the key leaks until its TTL.
	KindLostAcquireUnknown Kind = "lost-acquire-unknown"
	// KindStarvation: a key nobody could take for longer than the deadlock
	// bound while acquisitions were attempted.
	KindStarvation Kind = "starvation"
	// KindOrphanedKey: a key that stayed set for longer than the orphan
	// bound after the last client that believed in it stopped.
	KindOrphanedKey Kind = "orphaned-key"
)

// Kinds are every kind, in order.
var Kinds = []Kind{KindTwoHolders, KindHarm, KindReleaseFalseSuccess, KindExtendFalseSuccess,
	KindReleaseNotFreed, KindLostAcquire, KindLostAcquireUnknown, KindStarvation, KindOrphanedKey}

// KnownKind says k is one of Kinds.
func KnownKind(k string) bool { return slices.Contains(Kinds, Kind(k)) }

// Finding is one kind of wrong a run showed.
type Finding struct {
	Kind Kind `json:"kind"`
	// Count is how many times it was shown (pairs of holders, harmful
	// writes, false successes, leaks).
	Count int `json:"count"`
	// FirstNs is when the first one began.
	FirstNs int64 `json:"first_ns"`
	// Witness tells the first one in a sentence.
	Witness string `json:"witness"`
	// Permitted says the run's expectation allows this kind here, and
	// Why says why (or why not); set by the runner, not the checker.
	Permitted bool   `json:"permitted"`
	Why       string `json:"why,omitempty"`
}

// Finding returns the finding of kind k (nil: not shown).
func (r *Result) Finding(k Kind) *Finding {
	for i := range r.Findings {
		if r.Findings[i].Kind == k {
			return &r.Findings[i]
		}
	}
	return nil
}

// Unpermitted are the findings the expectation does not allow.
func (r *Result) Unpermitted() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if !f.Permitted {
			out = append(out, f)
		}
	}
	return out
}

// sortFindings puts r.Findings in the order of Kinds.
func sortFindings(r *Result) {
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		return slices.Index(Kinds, a.Kind) - slices.Index(Kinds, b.Kind)
	})
}

// Permission says whether one kind of finding may appear in a run, and why.
type Permission struct {
	Kind      Kind   `json:"kind"`
	Permitted bool   `json:"permitted"`
	Why       string `json:"why,omitempty"`
}

// Permit marks each finding of r with its permission; a kind that ps does
// not name is not permitted. With no permissions at all (a run without an
// expectation, a history from before findings) nothing is judged per kind:
// every finding is permitted, and only the verdict word counts.
func (r *Result) Permit(ps []Permission) {
	for i := range r.Findings {
		f := &r.Findings[i]
		if ps == nil {
			f.Permitted, f.Why = true, "not judged per kind: the run has no permissions"
			continue
		}
		f.Permitted, f.Why = false, ""
		for _, p := range ps {
			if p.Kind == f.Kind {
				f.Permitted, f.Why = p.Permitted, p.Why
			}
		}
	}
}
