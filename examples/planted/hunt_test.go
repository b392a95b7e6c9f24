package planted

import (
	"os"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/locktest"
	"github.com/lockstorm/lockstorm/reports"
	"github.com/lockstorm/lockstorm/scenarios"
)

// TestHuntPlanted: locktest.Hunt, with no scenario named, finds each
// planted lock's bug with its class within the budget
// (LOCKSTORM_HUNT_BUDGET, default locktest.Hunt's own, a minute a lock: a
// wall-time budget on a shared machine buys fewer runs at a higher load),
// and nothing in the correct ones; the client-process locks on
// redis-server, the others on sim. A whole pass takes minutes: it runs when LOCKSTORM_TEST_PLANTED=1 (make
// planted); LOCKSTORM_TEST_LOCKS narrows it to a few locks.
func TestHuntPlanted(t *testing.T) {
	if os.Getenv("LOCKSTORM_TEST_PLANTED") != "1" {
		t.Skip("a hunt per planted lock, minutes: set LOCKSTORM_TEST_PLANTED=1 (make planted)")
	}
	var budget time.Duration // locktest.Hunt's default
	if s := os.Getenv("LOCKSTORM_HUNT_BUDGET"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("LOCKSTORM_HUNT_BUDGET=%q: %v", s, err)
		}
		budget = d
	}
	for _, tr := range trials(t) {
		// sim runs no process: a client-process lock is hunted on
		// redis-server, in real time (fewer runs in the same budget).
		backend := "sim"
		if tr.lock.Program != nil {
			backend = "redis-server"
		}
		t.Run(tr.lock.Name, func(t *testing.T) {
			res, err := locktest.Hunt(t.Context(), tr.lock, locktest.HuntOptions{Budget: budget, Backend: backend})
			if err != nil {
				t.Fatal(err)
			}
			judgeHunt(t, tr, res)
		})
	}
}

// judgeHunt fails t unless the hunt found a planted lock's class, or found
// nothing in a correct one.
func judgeHunt(t *testing.T, tr trial, res *scenarios.HuntResult) {
	t.Helper()
	o := res.Found
	switch {
	case tr.want == "" && o != nil:
		t.Errorf("correct %s: %s seed %d: %s, expected %s: %s", tr.lock.Name, o.Scenario, o.Seed, o.Result.Verdict, o.Expected, o.Result.Reason)
	case tr.want != "" && o == nil:
		t.Errorf("planted %s (%s): nothing found in %d runs (%.1f s); %s", tr.lock.Name, tr.part, res.Runs, res.Elapsed.Seconds(), res.Line())
	case tr.want != "" && !showsClass(o, tr.want):
		t.Errorf("planted %s (%s): found %s × seed %d %s (expected %s), not %s", tr.lock.Name, tr.part, o.Scenario, o.Seed,
			o.Result.Verdict, o.Expected, tr.want)
	}
	if o != nil {
		t.Logf("%s: %s seed %d: %s %s after %d runs, %.1f s; %s", tr.lock.Name, o.Scenario, o.Seed, o.Result.Verdict,
			reports.FindingsBrief(o.Result.Unpermitted()), res.Runs, res.Elapsed.Seconds(), res.Line())
	} else {
		t.Logf("%s: nothing in %d runs, %.1f s; %s", tr.lock.Name, res.Runs, res.Elapsed.Seconds(), res.Line())
	}
}

// showsClass says whether o shows class: its verdict, or a kind of finding
// its claims do not permit. A hunt stops at its first forbidden run, which
// may show a deadlock's bug before any run starves past its bound: a key
// that outlived every client who believed in it (orphaned-key) or a
// starvation in a run judged inconclusive is the same class, a lock
// nobody can take again.
func showsClass(o *scenarios.Outcome, class string) bool {
	if o.Result.Verdict == class {
		return true
	}
	for _, f := range o.Result.Unpermitted() {
		if string(f.Kind) == class {
			return true
		}
		if class == checker.Deadlock && (f.Kind == history.KindOrphanedKey || f.Kind == history.KindStarvation) {
			return true
		}
	}
	return false
}
