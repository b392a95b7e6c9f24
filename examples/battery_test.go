package examples

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/locktest"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// TestBattery runs every lockstorm scenario against each library. The
// expectations come from each library's claims, with the reason each
// scenario's fault gives; `go test -v` prints the matrix. A verdict that
// differs fails its subtest and keeps its run folder (set LOCKSTORM_OUT to
// choose where).
//
// The real-Sentinel scenarios (sentinel-*) run apart, in
// TestBatterySentinel: their runs mostly wait on Sentinel's timers, so
// they run many at once, and make noisy (which runs TestBattery under
// load) leaves them out to keep CI's time. So do the Redis Cluster ones
// (cluster-*, TestBatteryCluster). Each library's extend must show in the
// history of the battery's extending scenario (extendsRecorded).
func TestBattery(t *testing.T) {
	var names []string
	for _, n := range spec.Names() {
		if !strings.HasPrefix(n, "sentinel-") && !strings.HasPrefix(n, "cluster-") {
			names = append(names, n)
		}
	}
	for _, lock := range []lockimpl.Info{Redsync, Redlock, Redislock} {
		t.Run(lock.Name, func(t *testing.T) {
			rep := locktest.Run(t, lock, locktest.Battery{Parallel: 3, Scenarios: names})
			extendsRecorded(t, rep)
		})
	}
}

// TestBatterySentinel puts the three libraries through the real-Sentinel
// scenarios, judged by their claims: split-votes decides how a quorum
// lock's votes fall in a split brain, and a server's refusal (NOREPLICAS)
// is a definite no whether the library reports it or folds it into its own
// "not obtained" (redsync's ErrFailed).
func TestBatterySentinel(t *testing.T) {
	var names []string
	for _, n := range spec.Names() {
		if strings.HasPrefix(n, "sentinel-") {
			names = append(names, n)
		}
	}
	for _, lock := range []lockimpl.Info{Redsync, Redlock, Redislock} {
		t.Run(lock.Name, func(t *testing.T) {
			t.Parallel()
			locktest.Run(t, lock, locktest.Battery{Parallel: len(names), Scenarios: names})
		})
	}
}

// TestBatteryCluster puts the libraries through the scheduled Redis
// Cluster scenarios, judged by their claims: the single-instance library
// (bsm/redislock) gets a go-redis ClusterClient as its client; the quorum
// libraries are skipped (a cluster gives a lock one client).
func TestBatteryCluster(t *testing.T) {
	names := []string{"cluster-failover", "cluster-minority-partition", "cluster-reshard"}
	for _, lock := range []lockimpl.Info{Redsync, Redlock, Redislock} {
		t.Run(lock.Name, func(t *testing.T) {
			t.Parallel()
			locktest.Run(t, lock, locktest.Battery{Parallel: len(names), Scenarios: names})
		})
	}
}

// TestBatterySlowObserver runs the battery against the library that
// retries and spans nodes with every server observer's events 5-95 ms late
// (issue 17): the verdicts are the battery's own, and not one release is
// flagged as a false success because its events arrived late (contention ×
// redsync-5 once was: a failed try's set and cleanup, the winning sets
// received after the release began).
func TestBatterySlowObserver(t *testing.T) {
	var names []string
	for _, n := range spec.Names() {
		if !strings.HasPrefix(n, "sentinel-") {
			names = append(names, n)
		}
	}
	delay := scenarios.Delay{Latency: 50 * time.Millisecond, Jitter: 45 * time.Millisecond}
	// redsync on five masters: retries with one value and cleans up its
	// failed tries, the pattern that was once flagged.
	for _, lock := range []lockimpl.Info{Redlock} {
		t.Run(lock.Name, func(t *testing.T) {
			rep := locktest.Run(t, lock, locktest.Battery{Parallel: 3, Scenarios: names, ObserverDelay: delay})
			unjudged, synced := 0, 0
			for _, o := range rep.Outcomes {
				if o.Result.FalseSuccesses > 0 {
					t.Errorf("%s: %d false successes with a slow observer: %s", o.Scenario, o.Result.FalseSuccesses, o.Result.FalseSuccess)
				}
				// A run whose only node is killed at once (failover) may end
				// before any sync came back.
				if o.Result.ObserverSyncs > 0 {
					synced++
					if o.Result.ObserverLagMaxMs < 5 {
						t.Errorf("%s: observer lag at most %.1f ms: the delay was not applied", o.Scenario, o.Result.ObserverLagMaxMs)
					}
				}
				unjudged += o.Result.FalseSuccessUnjudged
			}
			if synced < len(rep.Outcomes)/2 {
				t.Errorf("only %d of %d runs had an observer sync", synced, len(rep.Outcomes))
			}
			t.Logf("%d runs (%d with syncs), %d releases not judged (observer behind)", len(rep.Outcomes), synced, unjudged)
		})
	}
}
