package checker

import "github.com/lockstorm/lockstorm/history"

// validityCheck reports the history's problems (see Validate) and the
// entries the pass found out of sequence.
type validityCheck struct{}

func (validityCheck) name() string { return "history validity" }

func (validityCheck) run(a *analysis) finding {
	return validityFinding{problems: a.problems, malformed: len(a.problems) + a.malformed}
}

// validityFinding is what the history's validation found.
type validityFinding struct {
	problems  []history.Problem
	malformed int
}

func (f validityFinding) apply(r *Result) {
	r.Malformed = f.malformed
	r.Problems = f.problems[:min(len(f.problems), maxProblems)]
}
