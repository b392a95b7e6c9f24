package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// topology is what a run stands on: the Redis nodes, one proxied link per
// (client host, node) pair so faults can single out any client's path, and
// replicas replicating through links of their own.
type topology struct {
	cl       cluster.Cluster
	net      *nemesis.Network
	hosts    int
	hostOf   func(client int) string
	replicas map[string]*cluster.Process
	// sentinel is set in the Sentinel topology (see sentinel.go).
	sentinel *sentinelSet
	// rcluster is set in the Redis Cluster topology (see rediscluster.go).
	rcluster *clusterSet
}

// setupFault, in tests, makes a start-up stage fail (servers, replicas,
// sentinels, subscribe, ready): each partially built topology must close
// cleanly and report the stage's error.
var setupFault func(stage string) error

// stage says whether a test made the named start-up stage fail.
func stage(name string) error {
	if setupFault == nil {
		return nil
	}
	if err := setupFault(name); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// startTopology starts the backend's nodes, the links and the replicas.
// On error everything started so far is stopped.
func startTopology(ctx context.Context, plan *Plan, cfg Config) (_ *topology, err error) {
	if plan.Sentinel != nil {
		return startSentinelTopology(ctx, plan, cfg)
	}
	if plan.Cluster != nil {
		return startClusterTopology(ctx, plan, cfg)
	}
	nodes := plan.Nodes
	if err := stage("backend"); err != nil {
		return nil, err
	}
	cl, err := cluster.Start(ctx, cfg.Backend, cluster.Options{Nodes: nodes, Log: cfg.Log,
		ServerClock: plan.ServerClock})
	if err != nil {
		return nil, fmt.Errorf("start %s backend: %w", cfg.Backend, err)
	}
	t := &topology{cl: cl, net: nemesis.NewNetwork(), replicas: map[string]*cluster.Process{}}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	if err := stage("servers"); err != nil {
		return nil, err
	}
	cfg.Log.Info("backend up", "kind", cl.Kind(), "nodes", nodes)
	t.hosts, t.hostOf = plan.Hosts, plan.HostOf
	for h := 0; h < t.hosts; h++ {
		for _, n := range cl.Nodes() {
			if _, err := t.net.AddLink(fmt.Sprintf("h%d", h+1), n.Name, n.Addr); err != nil {
				return nil, err
			}
		}
	}
	if plan.Replicas > 0 {
		servers, ok := cl.(*cluster.Servers)
		if !ok {
			return nil, fmt.Errorf("scenario %s needs replicas, which only the redis-server backend has", plan.Scenario)
		}
		for i, n := range cl.Nodes() {
			// Replication flows through its own link, so a fault can delay or cut it.
			link, err := t.net.AddLink(fmt.Sprintf("r%d", i+1), n.Name, n.Addr)
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
			t.replicas[n.Name] = rep
		}
		if err := stage("replicas"); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// connect opens one client's connections, one per node, each through that
// client host's own link to the node. hook, when set, gives the hook of
// the connection to a node (the command points).
func (t *topology) connect(client int, host string, timeout time.Duration, p *pauser, hook func(node string) redis.Hook) []redis.UniversalClient {
	if t.sentinel != nil {
		return t.sentinel.connect(t, client, host, timeout, p, hook)
	}
	if t.rcluster != nil {
		return t.rcluster.connect(t, client, host, timeout, p, hook)
	}
	var out []redis.UniversalClient
	for _, n := range t.cl.Nodes() {
		link := t.net.Link(host, n.Name)
		rdb := redis.NewClient(&redis.Options{
			Addr: link.Addr, MaxRetries: -1, DialTimeout: timeout,
			ReadTimeout: timeout, WriteTimeout: timeout,
			PoolSize: 4, ContextTimeoutEnabled: true, Protocol: 2,
			// One dial attempt: a dead node is a refused connection (a
			// definite no for Redlock), not five attempts that end as a timeout.
			DialerRetries:   1,
			DisableIdentity: true,
		})
		rdb.AddHook(pauseHook{p})
		rdb.AddHook(refuseHook{link})
		if hook != nil {
			// Inside the pause hook: a paused client's command waits
			// before its before point and its reply after its after point.
			rdb.AddHook(hook(n.Name))
		}
		out = append(out, rdb)
	}
	return out
}

// observed are the servers whose key events the run records: the nodes,
// and in a cluster its replicas too (any may be promoted, and a migrated
// key lands on another master).
func (t *topology) observed() []cluster.Node {
	nodes := t.cl.Nodes()
	if t.rcluster != nil {
		for _, r := range t.rcluster.rc.Replicas {
			nodes = append(nodes, r.Node)
		}
	}
	return nodes
}

// Close stops the links, then the nodes: whatever of them was started,
// since a start-up that failed half-way closes what it built.
func (t *topology) Close() {
	if t.sentinel != nil {
		t.sentinel.close()
	}
	if t.rcluster != nil {
		t.rcluster.close()
	}
	if t.net != nil {
		t.net.Close()
	}
	if t.cl != nil {
		t.cl.Close()
	}
}
