package scenarios_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// TestQuorumScenariosCatchBrokenRedlock: each quorum scenario gives the
// correct redlock its derived verdict on three seeds, and catches a Redlock
// broken the way the scenario is about (lock.extra, see lockimpl's
// redlock): its verdict differs from what its claims (a quorum lock's,
// unchanged) derive. So the scenarios are not vacuous: they tell the
// correct algorithm from the broken one, without naming either.
//
// The scenarios are scheduled (the interleaving is forced), so CI runs one
// seed; LOCKSTORM_TEST_SEEDS=3 runs the three the issue asked for.
func TestQuorumScenariosCatchBrokenRedlock(t *testing.T) {
	cluster.StartForTest(t, 5)
	seeds := uint64(1)
	if n, err := strconv.Atoi(os.Getenv("LOCKSTORM_TEST_SEEDS")); err == nil && n > 0 {
		seeds = uint64(n)
	}
	// The runs go at once, through the admission gate.
	b := scenarios.NewBatchForTest()
	defer b.Start(5 * time.Minute)
	for _, tc := range []struct {
		scenario string
		broken   map[string]string
	}{
		{"quorum-split", map[string]string{"quorum": "half"}},
		{"quorum-restarts", map[string]string{"quorum": "half"}},
		{"quorum-slow-replies", map[string]string{"validity": "unchecked"}},
		{"quorum-slow-extend", map[string]string{"quorum": "half"}},
	} {
		for _, broken := range []bool{false, true} {
			for seed := uint64(1); seed <= seeds; seed++ {
				name := fmt.Sprintf("%s/broken=%v/seed=%d", tc.scenario, broken, seed)
				t.Run(name, func(t *testing.T) {
					spec, err := spec.Load(tc.scenario)
					if err != nil {
						t.Fatal(err)
					}
					if broken {
						spec.Lock.Extra = tc.broken
					}
					info, err := lockimpl.Lookup("redlock")
					if err != nil {
						t.Fatal(err)
					}
					want := spec.Derived(info.ClaimsUnder(spec.Lock)).Verdict
					i := b.Add(scenarios.Job{Spec: spec, Config: scenarios.Config{Impl: "redlock", Backend: cluster.RedisServer, Seed: seed}})
					r := b.Wait(t, i).Result
					t.Logf("%s: %s (derived %s): %s", name, r.Verdict, want, r.Reason)
					switch {
					case !broken && r.Verdict != want:
						t.Errorf("correct redlock: %s, derived %s: %s", r.Verdict, want, r.Reason)
					case broken && (r.Verdict == want || r.Verdict == checker.Inconclusive):
						t.Errorf("broken redlock %v not caught: %s (derived %s): %s", tc.broken, r.Verdict, want, r.Reason)
					}
				})
			}
		}
	}
}
