// Package zoo is go-redsync/redsync v4.18.1, the current release, on
// trial as its users run it: the library's own go-redis v9 pool, Until,
// the timeout factor and the typed answers (ErrTaken, ErrNodeTaken,
// ErrLockAlreadyExpired) of later releases.
package zoo

import (
	"errors"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter"
	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter/zootest"
	"github.com/lockstorm/lockstorm/lockimpl"
)

var release = redsyncadapter.Release{
	Version: "v4.18.1",
	Pool:    goredis.NewPool,
	Until:   (*redsync.Mutex).Until,
	// Each try waits TTL × timeout factor for the nodes: the spec's
	// node_timeout when it sets one (a quorum lock's timeout per node);
	// else, since redsync's 0.05 suits TTLs of seconds and the battery's
	// are 150 ms to 2 s while scheduling delays do not shrink with them,
	// at least 200 ms, at most half the TTL (as examples/redsync.go).
	Options: func(o lockimpl.Options) []redsync.Option {
		wait := min(max(o.TTL/20, 200*time.Millisecond), o.TTL/2)
		if o.NodeTimeout > 0 {
			wait = o.NodeTimeout
		}
		return []redsync.Option{redsync.WithTimeoutFactor(float64(wait) / float64(o.TTL))}
	},
	Answer: func(err error) bool {
		var taken *redsync.ErrTaken
		var node *redsync.ErrNodeTaken
		return errors.Is(err, redsync.ErrLockAlreadyExpired) || errors.As(err, &taken) || errors.As(err, &node)
	},
}

func TestZoo(t *testing.T) {
	zootest.Zoo(t, "github.com/go-redsync/redsync/v4", release.Version,
		zootest.Known{ReleaseFalseSuccess: false, ExtendLateYes: false, NoNodeTimeout: false}, release.Info(1), release.Info(5),
		release.SetNXOnExtend(5, redsync.WithSetNXOnExtend()))
}
