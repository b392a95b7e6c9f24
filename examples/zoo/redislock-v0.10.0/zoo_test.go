// Package zoo is bsm/redislock v0.10.0 on trial: Obtain's obtain script
// (v0.9.4 on), and a Refresh that retries transient errors with the
// strategy it is handed and returns ErrNotObtained at once when the key is
// not ours (PRs 83/88, the fix of v0.9.1's Refresh). On extend-blips:
// neither retry-cadence nor extend-gave-up.
package zoo

import (
	"testing"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/examples/zoo/redislockadapter"
	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter/zootest"
)

var release = redislockadapter.Release{Version: "v0.10.0",
	Client: func(c redis.UniversalClient) *redislock.Client { return redislock.New(c) }}

func TestZoo(t *testing.T) {
	zootest.Zoo(t, "github.com/bsm/redislock", release.Version, zootest.Known{StuckBackoff: false, ExtendNoRetry: false},
		release.Info(), release.ExpInfo())
}
