package examples

import (
	"os"
	"strconv"
	"testing"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/locktest"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// TestBatterySim puts the libraries through the scheduled scenarios in
// virtual time (the sim backend): no redis-server, no proxy, no network;
// the same seed gives the same history, so a failure replays exactly. The
// scheduled ones because each forces its interleaving, so its verdict is
// the same on sim as on redis-server (scenarios' TestSimFidelity); the
// random ones search, and miniredis runs a script far slower than Redis,
// so a search that costs real servers seconds costs sim minutes of CPU for
// a script-per-try Redlock. LOCKSTORM_SIM_SEEDS runs more seeds.
func TestBatterySim(t *testing.T) {
	var names []string
	for _, n := range spec.Names() {
		sp, err := spec.Load(n)
		if err != nil {
			t.Fatal(err)
		}
		if sp.Mode == "scheduled" {
			names = append(names, n)
		}
	}
	seeds := 1
	if s := os.Getenv("LOCKSTORM_SIM_SEEDS"); s != "" {
		seeds, _ = strconv.Atoi(s)
	}
	for _, lock := range []lockimpl.Info{Redsync, Redlock, Redislock} {
		t.Run(lock.Name, func(t *testing.T) {
			locktest.Run(t, lock, locktest.Battery{Backend: "sim", Seeds: seeds, Scenarios: names})
		})
	}
}
