// Package zoo is bsm/redislock v0.9.1 on trial: the first release whose
// Obtain re-arms its ticker with each backoff (PR 58: v0.8.2's polled at
// the first interval for ever), and whose Refresh still ignores the
// retry strategy it is handed (one transient error fails it; PRs 83/88,
// v0.10.0). On extend-blips: extend-gave-up, and no retry-cadence.
package zoo

import (
	"testing"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/examples/zoo/redislockadapter"
	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter/zootest"
)

var release = redislockadapter.Release{Version: "v0.9.1",
	Client: func(c redis.UniversalClient) *redislock.Client { return redislock.New(c) }}

func TestZoo(t *testing.T) {
	zootest.Zoo(t, "github.com/bsm/redislock", release.Version, zootest.Known{StuckBackoff: false, ExtendNoRetry: true},
		release.Info(), release.ExpInfo())
}
