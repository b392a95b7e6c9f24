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

// Conn is one connection to a server for a watcher's repeated read-only
// queries (CLUSTER NODES, CLUSTER INFO every 100 ms): a fresh connection
// per query cost a dial, an accept and a close on both sides each time,
// about a tenth of a cluster run's CPU. It dials on first use and again
// after any error; a query that failed on a connection already used once
// is sent again on a fresh one (the server may have restarted since),
// which only a read-only query may be. Not safe for concurrent use.
type Conn struct {
	// Addr is the server's address.
	Addr string
	c    net.Conn
	r    *bufio.Reader
}

// do sends one read-only command and returns its reply as do does.
func (c *Conn) do(args ...string) (any, error) {
	reused := c.c != nil
	v, err := c.try(args)
	if err != nil && reused {
		v, err = c.try(args)
	}
	return v, err
}

// try sends args on the connection, dialing it first if there is none,
// and drops the connection on any error but an error reply.
func (c *Conn) try(args []string) (any, error) {
	if c.c == nil {
		nc, err := net.DialTimeout("tcp", c.Addr, adminTimeout)
		if err != nil {
			return nil, err
		}
		c.c, c.r = nc, bufio.NewReader(nc)
	}
	_ = c.c.SetDeadline(time.Now().Add(adminTimeout))
	err := resp.Write(c.c, args...)
	var v any
	if err == nil {
		v, err = resp.Read(c.r)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	if e, ok := v.(resp.Error); ok {
		return nil, e
	}
	return v, nil
}

// Close closes the connection, if any.
func (c *Conn) Close() {
	if c.c != nil {
		c.c.Close()
		c.c, c.r = nil, nil
	}
}
