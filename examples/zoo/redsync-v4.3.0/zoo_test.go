// Package zoo is go-redsync/redsync v4.3.0 on trial: the last minor
// release before v4.4.0, whose Extend neither recomputes the validity nor
// tells it (Until came with the fix: PR 71, issue 72).
package zoo

import (
	"testing"

	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter"
	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter/zootest"
)

var release = redsyncadapter.Release{Version: "v4.3.0"}

func TestZoo(t *testing.T) {
	zootest.Zoo(t, "github.com/go-redsync/redsync/v4", release.Version,
		zootest.Known{ReleaseFalseSuccess: false, ExtendLateYes: true, NoNodeTimeout: true}, release.Info(1), release.Info(5))
}
