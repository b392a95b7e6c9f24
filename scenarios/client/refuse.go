package client

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// RefuseHook makes a client's dials through a link that rejects
// connections (nemesis.Link.Refuse) fail as the kernel fails them, with
// a refused dial, before anything else of the dial runs (a failover
// client's Sentinel lookup included), and reports any dial that failed as
// a dial error: go-redis hands a command the error of the dial it could
// not make (for a failover client, maybe a Sentinel lookup's timeout),
// which says nothing of where it came from, while a command whose
// connection was never made was never sent. A lock can then tell it from
// an unknown outcome (lockimpl.NotSent).
type RefuseHook struct{ Link *nemesis.Link }

// DialHook implements redis.Hook.
func (h RefuseHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if h.Link != nil && h.Link.Refused() {
			return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
		}
		c, err := next(ctx, network, addr)
		var op *net.OpError
		if err != nil && !(errors.As(err, &op) && op.Op == "dial") {
			err = &net.OpError{Op: "dial", Net: network, Err: err}
		}
		return c, err
	}
}

// ProcessHook implements redis.Hook.
func (h RefuseHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook implements redis.Hook.
func (h RefuseHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
