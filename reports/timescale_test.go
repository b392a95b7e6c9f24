package reports

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/scenarios"
)

// A run stretched to fit its lock's clock says so in its evidence (from
// the run, and from its history's header alone, as `check` reads it), in
// the JSON row and in the suite page's cell; an unscaled run says nothing.
func TestTimeScaleIsTold(t *testing.T) {
	ts := &history.TimeScale{Factor: 10, Granularity: time.Second, TTL: 300 * time.Millisecond}
	brief := "scaled ×10 for whole-second expiry: TTL 300ms → 3s"
	for _, tc := range []struct {
		name string
		res  checker.Result
		ts   *history.TimeScale
		want string
	}{
		{name: "clean", res: checker.Result{Verdict: checker.Safe, FirstViolationNs: -1}, ts: ts, want: brief},
		{name: "deadlock", res: checker.Result{Liveness: checker.Liveness{StarvedKey: "lock:0", LongestStarvedMs: 2000, StarvedFromNs: 5e8}, Verdict: checker.Deadlock, FirstViolationNs: 5e8}, ts: ts, want: "lock:0 starved 2.0 s from 500.0 ms; " + brief},
		{name: "unscaled", res: checker.Result{Verdict: checker.Safe, FirstViolationNs: -1}, want: NoEvidence},
	} {
		o := &scenarios.Outcome{Identity: history.Identity{Scenario: "s", Impl: "l", TimeScale: tc.ts}, Result: tc.res}
		row := FromOutcome(o)
		if row.Evidence != tc.want {
			t.Errorf("%s: evidence %q; want %q", tc.name, row.Evidence, tc.want)
		}
		offline := FromMeta(&history.Meta{Identity: history.Identity{Scenario: "s", Impl: "l", TimeScale: tc.ts}})
		offline.SetResult(tc.res)
		if offline.Evidence != row.Evidence {
			t.Errorf("%s: check's evidence %q differs from run's %q", tc.name, offline.Evidence, row.Evidence)
		}
		js, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(js), `"time_scale":{"factor":10,"granularity_ns":1000000000,"scenario_ttl_ns":300000000}`); got != (tc.ts != nil) {
			t.Errorf("%s: JSON time_scale present %v; want %v: %s", tc.name, got, tc.ts != nil, js)
		}
		var page strings.Builder
		if err := WriteSuite(&page, []SuiteRun{NewSuiteRun(row, nil, tc.res, "")}, SuiteInfo{}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(page.String(), "×10 time</span>"); got != (tc.ts != nil) {
			t.Errorf("%s: suite page marks the cell scaled: %v; want %v", tc.name, got, tc.ts != nil)
		}
	}
}
