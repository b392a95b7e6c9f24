package examples

import (
	"testing"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/locktest"
)

// TestBattery runs every lockstorm scenario against each library. The
// expectations come from each library's claims, with the reason each
// scenario's fault gives; `go test -v` prints the matrix. A verdict that
// differs fails its subtest and keeps its run folder (set LOCKSTORM_OUT to
// choose where).
func TestBattery(t *testing.T) {
	for _, lock := range []lockimpl.Info{Redsync, Redlock, Redislock} {
		t.Run(lock.Name, func(t *testing.T) {
			locktest.Run(t, lock, locktest.Battery{Parallel: 3})
		})
	}
}
