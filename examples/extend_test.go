package examples

import (
	"testing"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/locktest"
)

// TestExtendsRecorded: the shipped scenario whose holders extend
// (quorum-slow-extend: workload.extend_every) calls each library's own
// extend (redsync's Extend, bsm/redislock's Refresh) through
// lockimpl.Extender; every call is in the history, and the verdict is the
// one the library's claims derive.
func TestExtendsRecorded(t *testing.T) {
	for _, lock := range []lockimpl.Info{Redsync, Redlock, Redislock} {
		t.Run(lock.Name, func(t *testing.T) {
			rep := locktest.Run(t, lock, locktest.Battery{Scenarios: []string{"quorum-slow-extend"}})
			for _, o := range rep.Outcomes {
				r := o.Result
				t.Logf("%s × %s: %s; extends %d (ok %d, failed %d, unknown %d), false successes %d (on extend %d), unjudged %d",
					o.Scenario, lock.Name, r.Verdict, r.Extends, r.ExtendsOK, r.ExtendsFailed, r.ExtendsUnknown,
					r.FalseSuccesses, r.ExtendFalseSuccesses, r.FalseSuccessUnjudged)
				if r.Extends == 0 || r.ExtendsOK == 0 {
					t.Errorf("%s: %d extends, %d ok: the library's extend was not exercised", o.Scenario, r.Extends, r.ExtendsOK)
				}
			}
		})
	}
}
