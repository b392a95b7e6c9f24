package scenarios

import (
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/client"
)

// HookedClientForTest is a connection to addr with the command points of
// node on fp, as the runner gives each client; dead reports whether a
// point crashed it.
func HookedClientForTest(addr, node string, fp *lockimpl.Failpoints) (*redis.Client, func() bool) {
	var crashed atomic.Bool
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	rdb.AddHook(&client.CmdHook{Node: node, FP: fp, Crash: func(error) { crashed.Store(true) }, Dead: crashed.Load})
	return rdb, crashed.Load
}

// SetSetupFaultForTest makes start-up stages fail (nil: none).
func SetSetupFaultForTest(f func(stage string) error) { setupFault = f }
