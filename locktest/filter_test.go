package locktest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/locktest"
)

// TestFilterFollowsGoTestRun: the subtests Run starts are those `go test`
// would select with -run and -skip, level by level, alternatives and all.
func TestFilterFollowsGoTestRun(t *testing.T) {
	for _, tc := range []struct {
		name, parent, run, skip string
		keep, drop              []string
	}{
		{"no flags", "TestMyLock", "", "", []string{"del-race", "contention"}, nil},
		{"top level only", "TestMyLock", "TestMyLock", "", []string{"del-race", "contention"}, nil},
		{"one scenario", "TestMyLock", "TestMyLock/del-race$", "", []string{"del-race"}, []string{"del-race-random", "contention"}},
		{"prefix", "TestMyLock", "TestMyLock/del-race", "", []string{"del-race", "del-race-random"}, []string{"contention"}},
		{"alternatives", "TestMyLock", "TestMyLock/^(contention|del-race)$", "", []string{"contention", "del-race"}, []string{"del-race-random"}},
		{"top-level bar", "TestMyLock", "TestOther|TestMyLock/contention", "", []string{"contention"}, []string{"del-race"}},
		{"nested parent", "TestZoo/redsync", "TestZoo/redsync/pause", "", []string{"pause-past-ttl"}, []string{"contention"}},
		{"variant label", "TestMyLock", "TestMyLock/del-race.fast", "", []string{"del-race.fast"}, []string{"del-race"}},
		{"skip", "TestMyLock", "", "TestMyLock/random", []string{"del-race"}, []string{"del-race-random"}},
		{"skip deeper than the name does not skip", "TestMyLock", "", "TestMyLock/del-race/x", []string{"del-race"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keep := locktest.FilterFor(tc.parent, tc.run, tc.skip)
			for _, l := range tc.keep {
				if !keep(l) {
					t.Errorf("-run %q -skip %q dropped %s/%s", tc.run, tc.skip, tc.parent, l)
				}
			}
			for _, l := range tc.drop {
				if keep(l) {
					t.Errorf("-run %q -skip %q kept %s/%s", tc.run, tc.skip, tc.parent, l)
				}
			}
		})
	}
}

// TestFilteredBatteryRunsOnlySelected: a battery of a 5-second embedded
// scenario and a half-second spec of the user's, filtered to the latter,
// runs one scenario and not the other (before, every scenario ran and the
// filter only hid the others' subtests).
func TestFilteredBatteryRunsOnlySelected(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.yaml")
	if err := os.WriteFile(short, []byte(`name: short
clients: 4
keys: 1
duration: 500ms
lock: {ttl: 500ms, retry_delay: 5ms, wait_timeout: 1s}
workload: {cs_min: 0ms, cs_max: 2ms}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	lock := tokenInfo("my-lock", tokenClaims, false)
	start := time.Now()
	rep, err := locktest.CheckSelected(context.Background(), lock, locktest.Battery{Scenarios: []string{"contention", short},
		Backend: cluster.Embedded, Keep: "none"}, locktest.FilterFor("TestMyLock", "TestMyLock/^short$", ""))
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, o := range rep.Outcomes {
		ran = append(ran, o.Scenario)
	}
	if len(ran) != 1 || ran[0] != "short" {
		t.Fatalf("ran %v, want [short]", ran)
	}
	if wall := time.Since(start); wall > 4*time.Second {
		t.Errorf("took %v: contention (5 s) seems to have run", wall)
	}
}
