// Package zoo is bsm/redislock v0.8.2 on trial: its Obtain arms a
// time.Ticker with the first backoff and never resets it, so
// ExponentialBackoff polls at its minimum (PR 52 brought the ticker, PR 58
// fixed it in v0.9.1): redislock-exp@v0.8.2 shows retry-cadence on
// extend-blips (the adapter's linear backoff is the same either way); and
// its Refresh ignores the retry strategy it is handed (PRs 83/88,
// v0.10.0): extend-gave-up there. It is on github.com/go-redis/redis/v9 (rc.1), the go-redis module
// before its move: the shim (shim.go) is that client over the run's.
package zoo

import (
	"testing"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/examples/zoo/redislockadapter"
	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter/zootest"
)

var release = redislockadapter.Release{Version: "v0.8.2",
	Client: func(c redis.UniversalClient) *redislock.Client { return redislock.New(shim{c}) }}

func TestZoo(t *testing.T) {
	zootest.Zoo(t, "github.com/bsm/redislock", release.Version, zootest.Known{StuckBackoff: true, ExtendNoRetry: true},
		release.Info(), release.ExpInfo())
}
