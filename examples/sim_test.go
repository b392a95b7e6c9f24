package examples

import (
	"testing"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/locktest"
)

// TestBatterySim puts the three libraries through every scenario the sim
// backend can run, on three seeds each, in virtual time: no redis-server,
// no proxy, no network (the rest of the battery, TestBattery, is on real
// servers). The same seed gives the same history, so a failure here
// replays exactly.
func TestBatterySim(t *testing.T) {
	for _, lock := range []lockimpl.Info{Redsync, Redlock, Redislock} {
		t.Run(lock.Name, func(t *testing.T) {
			locktest.Run(t, lock, locktest.Battery{Backend: "sim", Seeds: simSeeds})
		})
	}
}

// simSeeds is how many seeds TestBatterySim runs each scenario on.
const simSeeds = 1
