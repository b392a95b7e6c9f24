package locktest_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/locktest"
)

// TestRedlockBattery puts the registered redlock through every shipped
// scenario on three seeds, judged by its claims: each verdict must equal
// its expectation. It runs every scenario three times (minutes of CPU), so
// it runs only when asked: LOCKSTORM_BATTERY=1 go test -run TestRedlockBattery.
func TestRedlockBattery(t *testing.T) {
	if os.Getenv("LOCKSTORM_BATTERY") == "" {
		t.Skip("the whole battery three times: set LOCKSTORM_BATTERY=1 to run it")
	}
	cluster.StartForTest(t, 1)
	info, err := lockimpl.Lookup("redlock")
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			locktest.Run(t, info, locktest.Battery{Seed: seed, Backend: cluster.RedisServer, Parallel: 2})
		})
	}
}
