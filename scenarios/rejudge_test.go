package scenarios

import (
	"context"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// A run the harness's own stalls left inconclusive is run again, up to
// Config.Rejudge more times (0: 2, negative: never), and the outcome keeps
// the earlier runs' reasons; any other verdict, inconclusive ones included,
// is final at once.
func TestRejudgeRunsAgainOnlyHarnessInconclusives(t *testing.T) {
	defer func(f func(context.Context, *spec.Spec, Config) (*Outcome, error)) { runAttempt = f }(runAttempt)
	for _, tc := range []struct {
		name     string
		rejudge  int
		verdicts []string // what successive attempts give; "harness" is a ByHarness inconclusive
		attempts int
		final    string
	}{
		{"safe at once", 0, []string{checker.Safe}, 1, checker.Safe},
		{"judged on the second run", 0, []string{"harness", checker.Unsafe}, 2, checker.Unsafe},
		{"default is two more", 0, []string{"harness", "harness", "harness", checker.Safe}, 3, checker.Inconclusive},
		{"never", -1, []string{"harness", checker.Safe}, 1, checker.Inconclusive},
		{"one more", 1, []string{"harness", "harness", checker.Safe}, 2, checker.Inconclusive},
		{"other inconclusive is final", 0, []string{checker.Inconclusive, checker.Safe}, 1, checker.Inconclusive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			runAttempt = func(context.Context, *spec.Spec, Config) (*Outcome, error) {
				v := tc.verdicts[n]
				n++
				o := &Outcome{Result: checker.Result{Verdict: v, Reason: v}}
				if v == "harness" {
					o.Result.Verdict, o.Result.ByHarness, o.Result.Reason = checker.Inconclusive, true, "harness stalled"
				}
				return o, nil
			}
			o, err := Run(context.Background(), &spec.Spec{Name: "s"}, Config{Rejudge: tc.rejudge})
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.attempts || o.Result.Verdict != tc.final || len(o.Rejudged) != tc.attempts-1 {
				t.Errorf("attempts %d, verdict %s, rejudged %d; want %d, %s, %d", n, o.Result.Verdict, len(o.Rejudged), tc.attempts, tc.final, tc.attempts-1)
			}
		})
	}
}
