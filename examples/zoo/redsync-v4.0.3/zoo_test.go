// Package zoo is go-redsync/redsync v4.0.3 on trial: its UnlockContext
// compares the script's reply (an int64) with the untyped constant 0, so
// every unlock, and every extend (compared with "ERR"), reports success,
// the lock's or not (fixed in v4.0.4, PR 61).
package zoo

import (
	"testing"

	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter"
	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter/zootest"
)

// release is v4.0.3 as it was: none of the later APIs.
var release = redsyncadapter.Release{Version: "v4.0.3"}

func TestZoo(t *testing.T) {
	zootest.Zoo(t, "github.com/go-redsync/redsync/v4", release.Version,
		zootest.Known{ReleaseFalseSuccess: true, ExtendLateYes: true, NoNodeTimeout: true, FixedRetryDelay: true}, release.Info(1), release.Info(5))
}
