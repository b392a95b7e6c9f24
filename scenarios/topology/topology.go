// Package topology builds what a run stands on: the Redis servers (single
// masters, masters with replicas, a Sentinel set, a Redis Cluster), one
// proxied link per (client host, server) pair and per pair of servers
// that talk, and the clients' connections through those links. It is
// built from Options, what the run's plan says of it; the plan's layout
// (package scenarios) names the same links in the same order.
package topology

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// Topology is what a run stands on: the Redis nodes, one proxied link per
// (client host, node) pair so faults can single out any client's path, and
// replicas replicating through links of their own.
type Topology struct {
	// Cluster is the backend: its nodes, and the servers the faults act on.
	Cluster cluster.Cluster
	// Net holds every link (and, for Sentinel and Cluster, the routers).
	Net *nemesis.Network
	// Hosts is how many client hosts there are; HostOf is a client's.
	Hosts  int
	HostOf func(client int) string
	// Replicas are the replicas by the name of their master.
	Replicas map[string]*cluster.Process
	// sentinel is set in the Sentinel topology (see sentinel.go).
	sentinel *sentinelSet
	// rcluster is set in the Redis Cluster topology (see rediscluster.go).
	rcluster *clusterSet
}

// Options are what a topology is built from: the plan's part of it.
type Options struct {
	// Scenario names the scenario in errors.
	Scenario string
	// Backend is auto, redis-server, embedded or sim (cluster.Resolve).
	Backend string
	// Seed seeds a sim network's delays (sim backend only).
	Seed uint64
	// Log receives the start-up's progress.
	Log *slog.Logger
	// Nodes are the masters; Replicas, when above 0, gives each a replica.
	Nodes    int
	Replicas int
	// Hosts is how many client hosts share the links; HostOf is a client's.
	Hosts  int
	HostOf func(client int) string
	// ServerClock starts the servers under the clock shim.
	ServerClock bool
	// Sentinel, when set, is the Sentinel topology; MinReplicas the data
	// servers' min-replicas settings (nil: none).
	Sentinel    *Sentinel
	MinReplicas *MinReplicas
	// Cluster, when set, is the Redis Cluster topology.
	Cluster *RedisCluster
	// Fault, in tests, makes a start-up stage fail (backend, servers,
	// replicas, sentinels, cluster, subscribe, ready): each partially built
	// topology must close cleanly and report the stage's error.
	Fault func(stage string) error
}

// Sentinel is a Sentinel set: Sentinels of them, with its quorum and
// timings.
type Sentinel struct {
	Sentinels, Quorum          int
	DownAfter, FailoverTimeout time.Duration
}

// MinReplicas are the masters' min-replicas-to-write and
// min-replicas-max-lag.
type MinReplicas struct {
	ToWrite int
	MaxLag  time.Duration
}

// RedisCluster is a Redis Cluster: Masters masters n1.., Replicas (0 or 1)
// replicas each, r_i of n_i, with cluster-node-timeout NodeTimeout.
type RedisCluster struct {
	Masters, Replicas int
	NodeTimeout       time.Duration
}

// stage says whether a test made the named start-up stage fail.
func (o *Options) stage(name string) error {
	if o.Fault == nil {
		return nil
	}
	if err := o.Fault(name); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Start starts the backend's nodes, the links and the replicas.
// On error everything started so far is stopped.
func Start(ctx context.Context, o Options) (_ *Topology, err error) {
	if o.Sentinel != nil {
		return startSentinelTopology(ctx, o)
	}
	if o.Cluster != nil {
		return startClusterTopology(ctx, o)
	}
	nodes := o.Nodes
	if err := o.stage("backend"); err != nil {
		return nil, err
	}
	cl, err := cluster.Start(ctx, o.Backend, cluster.Options{Nodes: nodes, Log: o.Log,
		ServerClock: o.ServerClock})
	if err != nil {
		return nil, fmt.Errorf("start %s backend: %w", o.Backend, err)
	}
	t := &Topology{Cluster: cl, Net: newNetwork(cl, o.Seed), Replicas: map[string]*cluster.Process{}}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	if err := o.stage("servers"); err != nil {
		return nil, err
	}
	o.Log.Info("backend up", "kind", cl.Kind(), "nodes", nodes)
	t.Hosts, t.HostOf = o.Hosts, o.HostOf
	for h := 0; h < t.Hosts; h++ {
		for _, n := range cl.Nodes() {
			if _, err := t.Net.AddLink(fmt.Sprintf("h%d", h+1), n.Name, n.Addr); err != nil {
				return nil, err
			}
		}
	}
	if o.Replicas > 0 {
		servers, ok := cl.(*cluster.Servers)
		if !ok {
			return nil, fmt.Errorf("scenario %s needs replicas, which only the redis-server backend has", o.Scenario)
		}
		for i, n := range cl.Nodes() {
			// Replication flows through its own link, so a fault can delay or cut it.
			link, err := t.Net.AddLink(fmt.Sprintf("r%d", i+1), n.Name, n.Addr)
			if err != nil {
				return nil, err
			}
			rep, err := servers.AddReplica(ctx, link.Addr)
			if err != nil {
				return nil, fmt.Errorf("replica of %s: %w", n.Name, err)
			}
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = rep.WaitOnline(wctx, n.Addr)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("replica of %s: %w", n.Name, err)
			}
			t.Replicas[n.Name] = rep
		}
		if err := o.stage("replicas"); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Hooks are what a client's connections carry (package client's), each
// added only when set.
type Hooks struct {
	// Pause holds the client's commands while it is paused.
	Pause redis.Hook
	// Refuse is the hook that refuses dials through a rejected link.
	Refuse func(link *nemesis.Link) redis.Hook
	// Points is the command points' hook of the connection to a node.
	Points func(node string) redis.Hook
}

func (h Hooks) refuse(link *nemesis.Link) redis.Hook {
	if h.Refuse == nil {
		return nil
	}
	return h.Refuse(link)
}

func (h Hooks) points(node string) redis.Hook {
	if h.Points == nil {
		return nil
	}
	return h.Points(node)
}

// addHooks adds hooks to rdb in order (the first runs outermost), skipping
// those not set.
func addHooks(rdb interface{ AddHook(redis.Hook) }, hooks ...redis.Hook) {
	for _, h := range hooks {
		if h != nil {
			rdb.AddHook(h)
		}
	}
}

// Connect opens one client's connections, one per node, each through that
// client host's own link to the node, with hooks on them.
func (t *Topology) Connect(client int, host string, timeout time.Duration, hooks Hooks) []redis.UniversalClient {
	if t.sentinel != nil {
		return t.sentinel.connect(t, client, host, timeout, hooks)
	}
	if t.rcluster != nil {
		return t.rcluster.connect(t, client, host, timeout, hooks)
	}
	var out []redis.UniversalClient
	for _, n := range t.Cluster.Nodes() {
		link := t.Net.Link(host, n.Name)
		opt := &redis.Options{
			Addr: link.Addr, MaxRetries: -1, DialTimeout: timeout,
			ReadTimeout: timeout, WriteTimeout: timeout,
			PoolSize: 4, ContextTimeoutEnabled: true, Protocol: 2,
			// One dial attempt: a dead node is a refused connection (a
			// definite no for Redlock), not five attempts that end as a timeout.
			DialerRetries:   1,
			DisableIdentity: true,
		}
		if t.Net.Sim() {
			opt.Dialer = t.dialSim
			// go-redis waits for a free connection on a timer from a
			// process-wide sync.Pool, and a timer made in one bubble of
			// virtual time kills the program when another uses it. With
			// a pool this size no command waits for a connection: where a
			// real run's fifth command in flight to one node would wait
			// PoolTimeout and fail, a sim run's dials a fifth connection
			// (docs/sim.md: what sim does differently).
			opt.PoolSize = simPoolSize
		}
		rdb := redis.NewClient(opt)
		var stagger redis.Hook
		if t.Net.Sim() && len(t.Cluster.Nodes()) > 1 {
			stagger = nodeStagger(len(out))
		}
		// The points inside the pause hook: a paused client's command
		// waits before its before point and its reply after its after point.
		addHooks(rdb, stagger, hooks.Pause, hooks.refuse(link), hooks.points(n.Name))
		out = append(out, rdb)
	}
	return out
}

// newNetwork is the network of links over cl: in-memory links in virtual
// time over a sim cluster, toxiproxy's over real sockets otherwise.
func newNetwork(cl cluster.Cluster, seed uint64) *nemesis.Network {
	if m, ok := cl.(*cluster.Minis); ok && cl.Kind() == cluster.Sim {
		return nemesis.NewSimNetwork(seed, m.Serve)
	}
	return nemesis.NewNetwork()
}

// nodeStagger is a sim client's first hook on its connection to node i
// of several (one node has no fan-out to order):
// once past the client's pause, its commands wait i+1 ns before anything
// else sees them. A lock that asks
// every node at once (Redlock's fan-out) starts its goroutines at one
// virtual instant, and so does a pause's end release them all; the points
// they pass (the explorer's draws among them) would be taken in the Go
// scheduler's order. A nanosecond apart, in the nodes' order, the same
// seed takes the same path.
//
// The steps are 1 + 97i ns, not i+1: a command can pass the hooks again
// inside another (the commands that set up a new connection), and no sum
// of fewer than 97 steps of one node equals a step of another.
func nodeStagger(i int) redis.Hook { return staggerHook(time.Duration(1 + 97*i)) }

type staggerHook time.Duration

func (staggerHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (d staggerHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		time.Sleep(time.Duration(d))
		return next(ctx, cmd)
	}
}

func (d staggerHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		time.Sleep(time.Duration(d))
		return next(ctx, cmds)
	}
}

// simPoolSize is the connection pool of a sim client (see Connect).
const simPoolSize = 1 << 10

// dialSim is the dialer of a client's connections on a sim network.
func (t *Topology) dialSim(_ context.Context, _, addr string) (net.Conn, error) {
	return t.Net.Dial(addr)
}

// RedisCluster is the Redis Cluster the topology runs (nil outside one).
func (t *Topology) RedisCluster() *cluster.RedisCluster {
	if t.rcluster == nil {
		return nil
	}
	return t.rcluster.rc
}

// FailsOver says whether the masters can change under the clients
// (Sentinel, Cluster): Follow then reports their events.
func (t *Topology) FailsOver() bool { return t.sentinel != nil || t.rcluster != nil }

// Follow makes a topology whose masters can change report its events
// (Sentinel's, the cluster's) and, per client, the server that answered
// it: every data server dialed under Sentinel, the node of each acquire
// (SET) in a cluster. A topology that cannot fail over ignores it.
func (t *Topology) Follow(events func(text string), dialed func(client int, server string)) {
	switch {
	case t.sentinel != nil:
		t.sentinel.events.Store(&events)
		t.sentinel.dialed.Store(&dialed)
	case t.rcluster != nil:
		t.rcluster.events.Store(&events)
		t.rcluster.dialed.Store(&dialed)
	}
}

// Observed are the servers whose key events the run records: the nodes,
// and in a cluster its replicas too (any may be promoted, and a migrated
// key lands on another master).
func (t *Topology) Observed() []cluster.Node {
	nodes := t.Cluster.Nodes()
	if t.rcluster != nil {
		for _, r := range t.rcluster.rc.Replicas {
			nodes = append(nodes, r.Node)
		}
	}
	return nodes
}

// Close stops the links, then the nodes: whatever of them was started,
// since a start-up that failed half-way closes what it built.
func (t *Topology) Close() {
	if t.sentinel != nil {
		t.sentinel.close()
	}
	if t.rcluster != nil {
		t.rcluster.close()
	}
	if t.Net != nil {
		t.Net.Close()
	}
	if t.Cluster != nil {
		t.Cluster.Close()
	}
}
