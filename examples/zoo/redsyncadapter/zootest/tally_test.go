package zootest

import (
	"reflect"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/locktest"
	"github.com/lockstorm/lockstorm/scenarios"
)

// TestTally: a run whose verdict was expected but whose finding the
// expectation does not permit is counted, the kind named beside it; a
// permitted finding is not.
func TestTally(t *testing.T) {
	run := func(verdict string, fs ...checker.Finding) *scenarios.Outcome {
		o := &scenarios.Outcome{Result: checker.Result{Verdict: verdict, Findings: fs}}
		o.Scenario, o.Expected = "quorum-lockstep", checker.Safe
		return o
	}
	lockstep := checker.Finding{Kind: history.KindLockstepRetries, Count: 1}
	permitted := lockstep
	permitted.Permitted = true
	for _, tc := range []struct {
		name     string
		o        *scenarios.Outcome
		want     int
		verdicts []string
	}{
		{"as expected", run(checker.Safe), 0, nil},
		{"verdict", run(checker.Deadlock), 1, []string{"deadlock/safe"}},
		{"unpermitted finding", run(checker.Safe, lockstep), 1, []string{"safe/safe !lockstep-retries"}},
		{"permitted finding", run(checker.Safe, permitted), 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Tally([]*locktest.Report{{Outcomes: []*scenarios.Outcome{tc.o}}})["quorum-lockstep"]
			if f.Unexpected != tc.want || !reflect.DeepEqual(f.Verdicts, tc.verdicts) {
				t.Errorf("unexpected %d %q, want %d %q", f.Unexpected, f.Verdicts, tc.want, tc.verdicts)
			}
		})
	}
}
