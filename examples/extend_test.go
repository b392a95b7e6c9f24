package examples

import (
	"testing"

	"github.com/lockstorm/lockstorm/locktest"
)

// extendScenario is the shipped scenario whose holders extend
// (workload.extend_every) on every topology the libraries run on.
const extendScenario = "quorum-slow-extend"

// extendsRecorded: in extendScenario each library's own extend (redsync's
// Extend, bsm/redislock's Refresh) is called through lockimpl.Extender,
// and every call is in the history. It reads TestBattery's own run of the
// scenario (same lock, same seed) instead of running it again; its verdict
// is judged there, by the library's claims. A -run pattern that leaves the
// scenario out leaves nothing to read.
func extendsRecorded(t *testing.T, rep *locktest.Report) {
	t.Helper()
	for _, o := range rep.Outcomes {
		if o.Scenario != extendScenario {
			continue
		}
		r := o.Result
		t.Logf("%s × %s: %s; extends %d (ok %d, failed %d, unknown %d), false successes %d (on extend %d), unjudged %d",
			o.Scenario, o.Impl, r.Verdict, r.Extends, r.ExtendsOK, r.ExtendsFailed, r.ExtendsUnknown,
			r.FalseSuccesses, r.ExtendFalseSuccesses, r.FalseSuccessUnjudged)
		if r.Extends == 0 || r.ExtendsOK == 0 {
			t.Errorf("%s: %d extends, %d ok: the library's extend was not exercised", o.Scenario, r.Extends, r.ExtendsOK)
		}
	}
}
