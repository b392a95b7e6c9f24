package scenarios

import (
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// TestExpectedLengthIsThePlans: jobs are ordered by what their plans will
// run, not by their specs: a lock with whole-second expiry runs the
// scenario stretched (lua-getset runs lua-unlock-stall's 5 s three times
// over), a Sentinel topology adds its start-up, and a job that does not
// compile keeps its spec's duration.
func TestExpectedLengthIsThePlans(t *testing.T) {
	for _, tc := range []struct {
		scenario, impl string
		scale          time.Duration // of the spec's duration
		extra          time.Duration
	}{
		{"lua-unlock-stall", "set-nx-px", 1, 0},
		{"lua-unlock-stall", "lua-getset", 3, 0}, // whole-second expiry, 1 s TTL: ×3
		{"sentinel-partition", "set-nx-px", 1, sentinelStartUp},
		{"lua-unlock-stall", "no-such-lock", 1, 0},
	} {
		spec, err := spec.Load(tc.scenario)
		if err != nil {
			t.Fatal(err)
		}
		want := tc.scale*spec.Duration + tc.extra
		if got := expectedLength(Job{Spec: spec, Config: Config{Impl: tc.impl}}); got != want {
			t.Errorf("%s × %s: %v, want %v", tc.scenario, tc.impl, got, want)
		}
	}
}
