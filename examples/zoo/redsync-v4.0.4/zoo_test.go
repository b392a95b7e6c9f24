// Package zoo is go-redsync/redsync v4.0.4 on trial: the release that
// fixed v4.0.3's unlock and extend answers (PR 61); its Extend still
// trusts a late yes (fixed in v4.4.0).
package zoo

import (
	"testing"

	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter"
	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter/zootest"
)

var release = redsyncadapter.Release{Version: "v4.0.4"}

func TestZoo(t *testing.T) {
	zootest.Zoo(t, "github.com/go-redsync/redsync/v4", release.Version,
		zootest.Known{ReleaseFalseSuccess: false, ExtendLateYes: true, NoNodeTimeout: true, FixedRetryDelay: true}, release.Info(1), release.Info(5))
}
