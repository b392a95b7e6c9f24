package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/history"
)

// TestStarvationWhileServersSilent: a starvation of a synthetic history
// (history.Synthetic: key 0's clients refused for 1 s half-way through,
// against a 200 ms bound) is a deadlock while the servers answered the
// observers' syncs, and inconclusive when every server left them
// unanswered for all but the bound of it (issue 41: a correct Redlock came
// out deadlock while no node answered anything for 2.6 s).
func TestStarvationWhileServersSilent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		syncs   int
		silent  time.Duration
		gone    bool // the nodes after n1 answer no sync from the starvation on
		events  bool // n1 records the lock's key events: the lock uses n1 only
		verdict string
		reason  string
	}{
		{"servers answering: deadlock", 1, 0, false, false, Deadlock, "had acquisitions pending and none granted for 10"},
		{"no syncs recorded: deadlock", 0, 0, false, false, Deadlock, "had acquisitions pending and none granted for 10"},
		{"the one server silent throughout: inconclusive", 1, time.Second, false, false, Inconclusive,
			"but no server answered anything for 9"},
		// 600 ms of silence leave 400 ms of the starvation, over the bound.
		{"silent for 600 ms of it: still a deadlock", 1, 600 * time.Millisecond, false, false, Deadlock, "none granted for 10"},
		// n2 answered while n1 was silent: a lock could have been granted.
		{"one of two servers silent: deadlock", 2, time.Second, false, false, Deadlock, "none granted for 10"},
		// n2 killed (its observer records nothing more) while n1, the
		// only node left, was silent: nothing could grant, by the machine.
		{"n1 silent, n2 gone: inconclusive", 2, time.Second, true, false, Inconclusive, "but no server answered anything for 9"},
		// n2 gone and n1 answering: the lock could have been granted.
		{"n1 answering, n2 gone: deadlock", 2, 0, true, false, Deadlock, "none granted for 10"},
		// every node gone: the scenario's doing, not the machine's.
		{"the one server gone: deadlock", 1, 0, true, false, Deadlock, "none granted for 10"},
		// n1, the only node the lock's keys were seen on, silent while
		// n2 (a master it never uses) answers: nothing could grant.
		{"n1 silent, n2 unused: inconclusive", 2, time.Second, false, true, Inconclusive, "but no server answered anything for 9"},
		{"n1 answering, n2 unused: deadlock", 2, 0, false, true, Deadlock, "none granted for 10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := history.Synthetic(history.SynthConfig{Ops: 2000, Clients: 4, Starve: time.Second,
				Syncs: tc.syncs, Silent: tc.silent, Gone: tc.gone, Events: tc.events, Seed: 7})
			r := Check(h, history.Options{DeadlockBound: 200 * time.Millisecond})
			if r.Verdict != tc.verdict || !strings.Contains(r.Reason, tc.reason) {
				t.Fatalf("verdict %s: %s\nwant %s: ...%s...", r.Verdict, r.Reason, tc.verdict, tc.reason)
			}
			if testing.Verbose() {
				t.Logf("%s: %s", r.Verdict, r.Reason)
			}
			starved := false
			for _, f := range r.Findings {
				starved = starved || f.Kind == history.KindStarvation
			}
			if starved != (tc.verdict == Deadlock) {
				t.Errorf("starvation finding %v with verdict %s", starved, r.Verdict)
			}
			if silentAll := tc.silent > 0 && (tc.syncs == 1 || tc.gone || tc.events); (r.ServersSilentMs > 0) != silentAll {
				t.Errorf("servers silent %.0f ms, want some: %v", r.ServersSilentMs, silentAll)
			}
		})
	}
}
