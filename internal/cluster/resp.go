package cluster

import (
	"bufio"
	"net"
	"time"

	"github.com/lockstorm/lockstorm/internal/resp"
)

// do sends one command on a fresh connection to addr and returns its reply:
// string (simple or bulk), int64, nil (null bulk/array), []any; an error
// reply is returned as the error (a resp.Error). The package speaks raw
// RESP for its few admin commands (PING, REPLICAOF, INFO) so that it needs
// no client library, and a fresh connection per command keeps it
// independent of any pool state across kills and restarts.
func do(addr string, timeout time.Duration, args ...string) (any, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if err := resp.Write(c, args...); err != nil {
		return nil, err
	}
	v, err := resp.Read(bufio.NewReader(c))
	if err != nil {
		return nil, err
	}
	if e, ok := v.(resp.Error); ok {
		return nil, e
	}
	return v, nil
}
