package nemesis

import (
	"context"
	"fmt"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// Failover does what Sentinel would: the master of each targeted node is
// killed, its replica is promoted (REPLICAOF NO ONE), and every client link
// to that node is pointed at the promoted replica. Writes the master
// acknowledged but had not replicated are gone: seed 002's flaw of the
// regular scheme. It does not heal; the promoted replica stays master.
func init() {
	Register("failover", "kill the targeted masters, promote their replicas and redirect the clients to them (as Sentinel)", nodesOnly,
		func(s Spec, _ *FailoverParams) (Fault, error) {
			if len(s.Nodes) == 0 {
				return nil, fmt.Errorf("failover: needs nodes")
			}
			return &failover{s}, nil
		})
}

// FailoverParams are failover's parameters: none, but the kind needs a
// replica to promote, outside a Redis Cluster (which fails over itself).
type FailoverParams struct{}

// Needs wants replicas and no cluster.
func (*FailoverParams) Needs(t Servers) string {
	if t.Cluster {
		return "failover is the harness playing Sentinel; in a cluster use kill (the cluster fails over by itself) or cluster-failover"
	}
	if t.Replicas == 0 {
		return "failover promotes a replica: set replicas: 1"
	}
	return ""
}

type failover struct{ spec Spec }

// SetUpstream points the link at another server: existing connections are
// dropped (the client sees its master vanish) and new ones reach addr. The
// link keeps its listener, so there is no window of refused connections.
func (l *Link) SetUpstream(addr string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.upstream = addr
	l.dropConns()
	return nil
}

func (f *failover) Inject(ctx context.Context, env *Env) (Heal, Targets, error) {
	sc, ok := env.Cluster.(cluster.ServerControl)
	if !ok {
		return nil, Targets{}, fmt.Errorf("failover: the %s backend has no server control", env.Cluster.Kind())
	}
	sel := f.spec.resolve(env)
	t := Targets{Missing: sel.missing}
	// A failover cannot be undone, so one that fails half-way reports the
	// error: the nodes already failed over stay so.
	for _, n := range sel.nodes {
		rep := env.Replicas[n]
		if rep == nil {
			return nil, Targets{}, fmt.Errorf("failover: node %s has no replica (set replicas: 1 in the scenario)", n)
		}
		i, err := nodeIndex(env, n)
		if err != nil {
			return nil, Targets{}, err
		}
		if err := sc.Kill(i); err != nil {
			return nil, Targets{}, fmt.Errorf("failover: kill %s: %w", n, err)
		}
		if err := rep.Promote(); err != nil {
			return nil, Targets{}, fmt.Errorf("failover: promote %s: %w", rep.Name, err)
		}
		for _, l := range redirected(env, n) {
			if err := l.SetUpstream(rep.Addr); err != nil {
				return nil, Targets{}, err
			}
			t.Links = append(t.Links, l.Name())
		}
		t.Nodes = append(t.Nodes, n)
		t.Replicas = append(t.Replicas, rep.Name)
	}
	return func() error { return nil }, t, nil
}

// redirected are the links a failover of node n points at its replica:
// every link to n but its replica's replication link.
func redirected(env *Env, n string) []*Link {
	return env.Net.Links(func(l *Link) bool { return l.Node == n && !isReplicaHost(env, l.Host) })
}

// isReplicaHost says whether a link's host is a replica (its replication
// link), not a client host.
func isReplicaHost(env *Env, host string) bool {
	for _, rep := range env.Replicas {
		if rep != nil && rep.Name == host {
			return true
		}
	}
	return false
}
