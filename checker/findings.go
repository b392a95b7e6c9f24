package checker

import (
	"slices"

	"github.com/lockstorm/lockstorm/history"
)

// Finding is one kind of wrong a run showed.
type Finding struct {
	Kind history.Kind `json:"kind"`
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
func (r *Result) Finding(k history.Kind) *Finding {
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

// AsExpected says whether r meets the expected verdict: the verdict is
// the expected one and every finding is permitted. With no expectation
// ("": a lock that declares no claims, on a spec that does not list it)
// any result does: its verdict is reported, not judged. A finding of a
// kind the expectation does not permit fails the run whatever its verdict:
// a release that lies inside a run whose overlap was expected is still a
// lie.
func (r *Result) AsExpected(expected string) bool {
	return expected == "" || r.Verdict == expected && len(r.Unpermitted()) == 0
}

// sortFindings puts r.Findings in the order of Kinds.
func sortFindings(r *Result) {
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		return slices.Index(history.Kinds, a.Kind) - slices.Index(history.Kinds, b.Kind)
	})
}

// Permit marks each finding of r with its permission; a kind that ps does
// not name is not permitted. With no permissions at all (a run without an
// expectation, a history from before findings) nothing is judged per kind:
// every finding is permitted, and only the verdict word counts.
func (r *Result) Permit(ps []history.Permission) {
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
