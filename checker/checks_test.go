package checker

import (
	"reflect"
	"testing"

	"github.com/lockstorm/lockstorm/checker/internal/keyevents"
	"github.com/lockstorm/lockstorm/history"
)

// TestCheckRegistry: every check has its own name, and each of its
// findings runs alone to the same figures as inside Check (no check
// depends on another's having run first).
func TestCheckRegistry(t *testing.T) {
	names := map[string]bool{}
	for _, c := range checks {
		if n := c.name(); n == "" || names[n] {
			t.Errorf("check %T: name %q empty or repeated", c, n)
		} else {
			names[n] = true
		}
	}
	h := history.Synthetic(history.SynthConfig{Ops: 3000, Keys: 3, Unknown: 0.05, Violation: true, Seed: 3})
	want := Check(h, history.Options{})
	for i, c := range checks {
		a := analyze(h).withInput(h)
		alone := make([]finding, len(checks))
		for j, other := range checks {
			if j != i {
				alone[j] = other.run(analyze(h).withInput(h))
			}
		}
		alone[i] = c.run(a)
		if got := compose(a, alone); !reflect.DeepEqual(got, want) {
			t.Errorf("%s run on its own analysis: %+v\nwant %+v", c.name(), got, want)
		}
	}
}

// TestComposeFirstViolation: the first violation is the earliest any
// finding names; on a tie the finding earlier in the registry names it
// (an overlap before the harm it did, harm before a false success).
func TestComposeFirstViolation(t *testing.T) {
	ov := func(at int64) finding {
		return overlapFinding{pairs: 1, witness: &Witness{Key: "k", FromNs: at, ToNs: at + 1}}
	}
	harm := func(at int64) finding { return resourceResult{stale: 1, firstHarm: at, harm: "x"} }
	none := resourceResult{firstHarm: -1}
	fs := func(at int64) finding {
		return falseSuccessFinding{FalseSuccessResult: keyevents.FalseSuccessResult{Found: []keyevents.FalseSuccess{{At: at, Text: "y", F: history.FRelease}}}}
	}
	for _, tc := range []struct {
		name     string
		findings []finding
		at       int64
		kind     string
	}{
		{"none", []finding{overlapFinding{}, none, falseSuccessFinding{}}, -1, ""},
		{"overlap alone", []finding{ov(5), none}, 5, ViolationOverlap},
		{"harm earlier", []finding{ov(5), harm(3)}, 3, ViolationHarm},
		{"tie: overlap", []finding{ov(5), harm(5), fs(5)}, 5, ViolationOverlap},
		{"false success earliest", []finding{ov(5), harm(4), fs(2)}, 2, ViolationFalseSuccess},
		{"tie: harm before false success", []finding{overlapFinding{}, harm(4), fs(4)}, 4, ViolationHarm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &analysis{opts: withDefaults(history.Options{})}
			r := compose(a, tc.findings)
			if r.FirstViolationNs != tc.at || r.FirstViolation != tc.kind {
				t.Errorf("first violation %d %q, want %d %q", r.FirstViolationNs, r.FirstViolation, tc.at, tc.kind)
			}
		})
	}
}

// withInput sets what the checks read besides the pass, as CheckParsed
// does for a history without problems, with default options.
func (a *analysis) withInput(h history.History) *analysis {
	a.input, a.opts = h, withDefaults(history.Options{})
	return a
}
