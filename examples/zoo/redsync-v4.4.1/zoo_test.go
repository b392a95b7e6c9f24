// Package zoo is go-redsync/redsync v4.4.1 on trial (the module proxy
// refuses v4.4.0): Extend recomputes the validity from its start and
// refuses a late yes (ErrExtendFailed); Until tells the holder its lease.
package zoo

import (
	"testing"

	"github.com/go-redsync/redsync/v4"

	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter"
	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter/zootest"
)

var release = redsyncadapter.Release{Version: "v4.4.1", Until: (*redsync.Mutex).Until}

func TestZoo(t *testing.T) {
	zootest.Zoo(t, "github.com/go-redsync/redsync/v4", release.Version,
		zootest.Known{ReleaseFalseSuccess: false, ExtendLateYes: false, NoNodeTimeout: true}, release.Info(1), release.Info(5))
}
