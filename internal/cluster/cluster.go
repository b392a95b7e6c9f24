// Package cluster starts and stops the Redis servers a run talks to: real
// redis-server processes (the default when one is installed) or an embedded
// miniredis for machines without one.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
)

// Backend kinds.
const (
	Auto        = "auto"
	RedisServer = "redis-server"
	Embedded    = "embedded"
)

// Node is one Redis server of a cluster.
type Node struct {
	// Name is n1, n2, ... in node order.
	Name string
	// Addr is the server's loopback host:port.
	Addr string
}

// Cluster is a set of independent Redis servers.
type Cluster interface {
	// Kind is RedisServer or Embedded.
	Kind() string
	// Nodes lists the servers in order.
	Nodes() []Node
	// Close stops every server and removes its files; it is idempotent.
	Close() error
}

// Options configure a cluster.
type Options struct {
	// Nodes is how many independent servers to start (at least 1).
	Nodes int
	// Log receives start/stop events; nil discards them.
	Log *slog.Logger
	// ServerClock runs each redis-server under the LD_PRELOAD clock shim so
	// that its wall clock can be moved while it runs (Process.SetClockOffset,
	// ServerControl.SetClockOffset). Off by default because every clock read
	// then costs a system call. The embedded backend needs no shim and
	// ignores it.
	ServerClock bool
	// ExtraArgs, when set, gives more redis-server arguments for the server
	// named name (n1.., r1..), kept across restarts: the Sentinel topology
	// sets each server's source address and announced address with it.
	ExtraArgs func(name string) []string
	// ClockShim is the path of a prebuilt shim (make's build/clockshim.so);
	// "" builds one on demand with EnsureShim.
	ClockShim string
	// Server is the redis-server binary to spawn: a path, or a name looked
	// up on PATH. "" takes $LOCKSTORM_REDIS_SERVER, then redis-server on
	// PATH. A wrapper script may stand in for it (it receives redis-server's
	// arguments); whatever it forks dies with it, since a server is stopped
	// by process group.
	Server string
	// Cluster, when set, starts every server as a Redis Cluster node
	// (cluster-enabled, its own bus port); FormCluster joins them.
	Cluster *ClusterOptions
}

// ServerEnv names the environment variable that chooses the redis-server
// binary when Options.Server is empty.
const ServerEnv = "LOCKSTORM_REDIS_SERVER"

// ServerBinary resolves the redis-server binary: explicit (Options.Server),
// else $LOCKSTORM_REDIS_SERVER, else redis-server on PATH.
func ServerBinary(explicit string) (string, error) {
	name := explicit
	if name == "" {
		name = os.Getenv(ServerEnv)
	}
	if name == "" {
		name = "redis-server"
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		if explicit != "" || os.Getenv(ServerEnv) != "" {
			return "", fmt.Errorf("redis-server binary %q: %w", name, err)
		}
		return "", ErrNoRedisServer
	}
	return bin, nil
}

// ErrNoRedisServer is returned when redis-server is asked for and missing.
var ErrNoRedisServer = errors.New("redis-server not found on PATH (install it: apt-get install -y redis-server; or use --backend embedded)")

// Resolve turns auto into a concrete kind: redis-server when it is on PATH.
func Resolve(kind string) (string, error) {
	switch kind {
	case "", Auto:
		if _, err := ServerBinary(""); err == nil {
			return RedisServer, nil
		}
		return Embedded, nil
	case RedisServer, Embedded, Sim:
		return kind, nil
	}
	return "", fmt.Errorf("unknown backend %q (want auto, redis-server, embedded or sim)", kind)
}

// Start starts a cluster of the given kind (auto resolved first).
func Start(ctx context.Context, kind string, o Options) (Cluster, error) {
	k, err := Resolve(kind)
	if err != nil {
		return nil, err
	}
	if o.Nodes < 1 {
		o.Nodes = 1
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	switch k {
	case RedisServer:
		return StartRedisServers(ctx, o)
	case Sim:
		return StartSim(o)
	default:
		return StartEmbedded(o)
	}
}
