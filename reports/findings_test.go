package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/scenarios"
)

// TestUnpermittedFindingFailsTheRow: a run whose verdict is the expected
// unsafe, but which showed a release false success its claims forbid, is a
// DIFF everywhere: the row's mark, its evidence (the finding first), JSON's
// findings and JUnit's failure. Permitted findings leave the mark ok.
func TestUnpermittedFindingFailsTheRow(t *testing.T) {
	for _, tc := range []struct {
		name      string
		permitted bool
		mark      string
	}{
		{"forbidden", false, "DIFF"},
		{"permitted", true, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := checker.Result{Verdict: checker.Unsafe, Reason: "two holders", FirstViolationNs: -1, Findings: []checker.Finding{
				{Kind: history.KindTwoHolders, Count: 3, Witness: "c1 and c2 both held lock:0", Permitted: true},
				{Kind: history.KindReleaseFalseSuccess, Count: 2, Witness: "false success: c1's release of lock:0 at 900.0 ms reported ok",
					Permitted: tc.permitted, Why: "release is owner-checked"},
			}}
			o := &scenarios.Outcome{Identity: history.Identity{Scenario: "pause-past-ttl", Impl: "mine", Mode: "scheduled", Gated: true, Expected: checker.Unsafe}, Result: res}
			if got := o.AsExpected(); got != tc.permitted {
				t.Errorf("Outcome.AsExpected %v, want %v", got, tc.permitted)
			}
			row := FromOutcome(o)
			if row.Mark() != tc.mark {
				t.Errorf("mark %s, want %s", row.Mark(), tc.mark)
			}
			if want := !tc.permitted; strings.HasPrefix(row.Evidence, "not permitted: release-false-success ×2") != want {
				t.Errorf("evidence %q: naming the forbidden finding first: want %v", row.Evidence, want)
			}
			if len(row.Findings) != 2 {
				t.Errorf("row findings %+v, want both", row.Findings)
			}
			var tl bytes.Buffer
			if err := WriteTimeline(&tl, nil, res, "t"); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(tl.String(), "not permitted</b>"); got == tc.permitted {
				t.Errorf("timeline marks a forbidden finding: %v, want %v", got, !tc.permitted)
			}
			var b bytes.Buffer
			if err := WriteJUnit(&b, []JUnitCase{{Row: row}}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(b.String(), `type="finding"`); got == tc.permitted {
				t.Errorf("JUnit failure of type finding: %v, want %v:\n%s", got, !tc.permitted, b.String())
			}
		})
	}
}
