package examples

import (
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/locktest"
)

// TestBattery runs every lockstorm scenario against each library. The
// expectations come from each library's claims, with the reason each
// scenario's fault gives; `go test -v` prints the matrix. A verdict that
// differs fails its subtest and keeps its run folder (set LOCKSTORM_OUT to
// choose where).
//
// The real-Sentinel scenarios (sentinel-*) are left out for now: their
// rules do not yet say what a quorum lock gets when a partition grants one
// master's vote twice (it depends on how the first holder's votes fell,
// which the schedule does not control), nor what a library that retries
// through a server's refusals (redsync hides NOREPLICAS behind ErrFailed)
// gets where a lock that reports them is judged not exercised.
func TestBattery(t *testing.T) {
	var names []string
	for _, n := range scenarios.Names() {
		if !strings.HasPrefix(n, "sentinel-") {
			names = append(names, n)
		}
	}
	for _, lock := range []lockimpl.Info{Redsync, Redlock, Redislock} {
		t.Run(lock.Name, func(t *testing.T) {
			locktest.Run(t, lock, locktest.Battery{Parallel: 3, Scenarios: names})
		})
	}
}
