package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Redis Cluster: masters n1.. and their replicas r1.. (r_i replicates n_i),
// every one a redis-server in cluster mode. The harness, not redis-cli,
// forms the cluster: slots split evenly over the masters (CLUSTER
// ADDSLOTSRANGE), every node met through the addresses it announces
// (CLUSTER MEET), each replica attached to its master (CLUSTER
// REPLICATE); ready only once every node reports the same slot map with
// no node failing and every replica acknowledges its master's writes.

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// ClusterOptions make every server a Redis Cluster node.
type ClusterOptions struct {
	// NodeTimeout is cluster-node-timeout: how long a node may be
	// unreachable before it is flagged failing (PFAIL), and how long a
	// master on the minority side keeps accepting writes. Failover starts
	// about NodeTimeout plus 0.5-1 s after a master stops answering.
	NodeTimeout time.Duration
}

// args are the cluster settings of a node whose bus listens on busPort.
// Full coverage is not required, so the slots of a failed master do not
// stop the other masters; a replica fails over however old its data is
// (validity factor 0), since a harness cutting replication wants the
// failover the cut makes dangerous; replicas never migrate between masters.
func (o *ClusterOptions) args(busPort int) []string {
	return []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(max(o.NodeTimeout.Milliseconds(), 1), 10),
		"--cluster-port", strconv.Itoa(busPort), "--cluster-require-full-coverage", "no",
		"--cluster-replica-validity-factor", "0", "--cluster-allow-replica-migration", "no"}
}

// Announced are the addresses a node tells the others and the clients to
// reach it at (its routers, in the scenarios' cluster topology).
type Announced struct {
	Data, Bus string
}

// RedisCluster is a formed Redis Cluster of spawned servers. The harness
// talks to the nodes' own addresses, never through the announced ones:
// its view must not be cut by the faults it injects.
type RedisCluster struct {
	Masters  []*Process
	Replicas []*Process // Replicas[i] replicates Masters[i] at the start
	// Announce maps a node's name to its announced addresses.
	Announce map[string]Announced

	mu  sync.Mutex
	ids map[string]string // node name -> cluster node id, and back
}

// AddClusterReplicas starts count more cluster nodes, r1.., at once, as
// AddReplica starts replicas (registered before they start, stopped by
// Close); FormCluster makes them replicas.
func (s *Servers) AddClusterReplicas(ctx context.Context, count int) ([]*Process, error) {
	if s.cluster == nil {
		return nil, errors.New("add cluster replicas: the servers are not cluster nodes (Options.Cluster)")
	}
	var ps []*Process
	for i := 0; i < count; i++ {
		p, err := s.newReplica()
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	if err := startAll(ctx, ps, (*Process).startOnFreePort); err != nil {
		return nil, err
	}
	return ps, nil
}

// FormCluster joins masters and replicas into one cluster and waits until
// it is ready (WaitReady). announce gives each node's announced addresses;
// a node missing from it announces its own.
func FormCluster(ctx context.Context, masters, replicas []*Process, announce map[string]Announced) (*RedisCluster, error) {
	if len(masters) == 0 || len(replicas) > len(masters) {
		return nil, fmt.Errorf("form cluster: %d masters, %d replicas: want at least one master and at most one replica each", len(masters), len(replicas))
	}
	c := &RedisCluster{Masters: masters, Replicas: replicas, Announce: map[string]Announced{}, ids: map[string]string{}}
	for _, p := range c.all() {
		a, ok := announce[p.Name]
		if !ok {
			a = Announced{Data: p.Addr, Bus: p.BusAddr()}
		}
		c.Announce[p.Name] = a
		v, err := do(p.Addr, adminTimeout, "CLUSTER", "MYID")
		if err != nil {
			return nil, fmt.Errorf("%s: CLUSTER MYID: %w", p.Name, err)
		}
		id, _ := v.(string)
		c.ids[p.Name], c.ids[id] = id, p.Name
	}
	for i, m := range masters {
		lo, hi := i*Slots/len(masters), (i+1)*Slots/len(masters)-1
		if _, err := do(m.Addr, adminTimeout, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return nil, fmt.Errorf("%s: CLUSTER ADDSLOTSRANGE %d %d: %w", m.Name, lo, hi, err)
		}
	}
	// Every node meets the first master; gossip introduces the rest.
	if err := c.meet(c.all()[1:]); err != nil {
		return nil, err
	}
	// A handshake not finished within node_timeout (a busy machine) is
	// dropped on the side that started it, and a node ignores the pings of
	// a node it does not know: such a pair stays apart. Each second, the
	// first master meets whom it does not know, and a node that does not
	// know everybody meets the first master itself.
	retry := time.Now().Add(time.Second)
	err := c.waitAll(ctx, "meet", func() error {
		err := c.allKnown()
		if err != nil && time.Now().After(retry) {
			retry = time.Now().Add(time.Second)
			merr := c.meet(c.unknownTo(masters[0]))
			for _, p := range c.all()[1:] {
				if len(c.unknownTo(p)) > 0 {
					merr = errors.Join(merr, c.meetFrom(p, masters[0]))
				}
			}
			if merr != nil {
				return errors.Join(err, merr)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, r := range replicas {
		if _, err := do(r.Addr, adminTimeout, "CLUSTER", "REPLICATE", c.ID(masters[i].Name)); err != nil {
			return nil, fmt.Errorf("%s: CLUSTER REPLICATE %s: %w", r.Name, masters[i].Name, err)
		}
	}
	return c, c.WaitReady(ctx)
}

// meet has the first master meet each of ps.
func (c *RedisCluster) meet(ps []*Process) error {
	for _, p := range ps {
		if err := c.meetFrom(c.Masters[0], p); err != nil {
			return err
		}
	}
	return nil
}

// meetFrom has node p meet node q at q's announced addresses.
func (c *RedisCluster) meetFrom(p, q *Process) error {
	a := c.Announce[q.Name]
	host, port, _ := net.SplitHostPort(a.Data)
	_, bus, _ := net.SplitHostPort(a.Bus)
	if _, err := do(p.Addr, adminTimeout, "CLUSTER", "MEET", host, port, bus); err != nil {
		return fmt.Errorf("%s: CLUSTER MEET %s (%s): %w", p.Name, q.Name, a.Data, err)
	}
	return nil
}

// unknownTo are the nodes p does not know (past the handshake); all of
// them when p does not answer.
func (c *RedisCluster) unknownTo(p *Process) []*Process {
	ns, err := Nodes(p.Addr)
	known := map[string]bool{}
	if err == nil {
		for _, n := range ns {
			if !n.Has("handshake") && !n.Has("noaddr") {
				known[c.Name(n.ID)] = true
			}
		}
	}
	var out []*Process
	for _, q := range c.all() {
		if q != p && !known[q.Name] {
			out = append(out, q)
		}
	}
	return out
}

func (c *RedisCluster) all() []*Process {
	return append(append([]*Process(nil), c.Masters...), c.Replicas...)
}

// ID is the cluster node id of the node named name ("" if unknown).
func (c *RedisCluster) ID(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[name]
}

// Name is the name of the node whose id is id ("" if unknown).
func (c *RedisCluster) Name(id string) string { return c.ID(id) }

// Node is the process named name, or nil.
func (c *RedisCluster) Node(name string) *Process {
	for _, p := range c.all() {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// WaitReady waits until every node reports the same cluster: every node
// known and connected, none failing, each replica replicating its master,
// every slot served; and until each replica acknowledges a write of its
// master (WaitOnline), so that a lock that WAITs is not refused for a
// replica still finishing its first sync.
func (c *RedisCluster) WaitReady(ctx context.Context) error {
	if err := c.waitAll(ctx, "slot map", c.agreed); err != nil {
		return err
	}
	for i, r := range c.Replicas {
		m := c.Masters[i]
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := r.waitOnline(wctx, m.Addr, c.probeKey(i))
		cancel()
		if err != nil {
			return fmt.Errorf("replica %s of %s: %w", r.Name, m.Name, err)
		}
	}
	return nil
}

// probeKey is a key of master i's first slot: the replication probe
// (ProbeKey with a hash tag that lands there).
func (c *RedisCluster) probeKey(i int) string {
	want := i * Slots / len(c.Masters)
	for n := 0; ; n++ {
		if k := fmt.Sprintf("%s{%d}", ProbeKey, n); KeySlot(k) == want {
			return k
		}
	}
}

// waitAll polls check until it passes or ctx ends (20 s at most).
func (c *RedisCluster) waitAll(ctx context.Context, what string, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		last := check()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster %s: %w (last: %v)", what, ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// allKnown: every node knows every other, past the handshake.
func (c *RedisCluster) allKnown() error {
	for _, p := range c.all() {
		ns, err := Nodes(p.Addr)
		if err != nil {
			return err
		}
		known := 0
		for _, n := range ns {
			if !n.Has("handshake") && !n.Has("noaddr") && c.Name(n.ID) != "" {
				known++
			}
		}
		if known < len(c.all()) {
			return fmt.Errorf("%s knows %d of %d nodes", p.Name, known, len(c.all()))
		}
	}
	return nil
}

// agreed: every node's view is the intended cluster (see WaitReady).
func (c *RedisCluster) agreed() error {
	var first string
	for _, p := range c.all() {
		ns, err := Nodes(p.Addr)
		if err != nil {
			return err
		}
		view, err := c.view(ns)
		if err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		if first == "" {
			first = view
		} else if view != first {
			return fmt.Errorf("%s sees %s, %s sees %s", c.all()[0].Name, first, p.Name, view)
		}
	}
	return nil
}

// view renders one node's CLUSTER NODES as "n1 master 0-5460; r1 of n1; ...",
// or says what is not ready in it.
func (c *RedisCluster) view(ns []ClusterNode) (string, error) {
	if len(ns) != len(c.all()) {
		return "", fmt.Errorf("%d nodes listed, want %d", len(ns), len(c.all()))
	}
	var parts []string
	for _, n := range ns {
		name := c.Name(n.ID)
		switch {
		case name == "":
			return "", fmt.Errorf("unknown node %s", n.ID)
		case n.Has("fail") || n.Has("fail?") || n.Has("handshake") || n.Has("noaddr"):
			return "", fmt.Errorf("%s flagged %v", name, n.Flags)
		case !n.Linked && !n.Has("myself"):
			return "", fmt.Errorf("%s not connected", name)
		case n.Has("master") && len(n.Slots) == 0:
			return "", fmt.Errorf("master %s serves no slot", name)
		case n.Has("master"):
			parts = append(parts, name+" master "+strings.Join(n.Slots, ","))
		default:
			parts = append(parts, name+" of "+c.Name(n.MasterID))
		}
	}
	sort.Strings(parts)
	v := strings.Join(parts, "; ")
	for i, r := range c.Replicas {
		if !strings.Contains(v, r.Name+" of "+c.Masters[i].Name) {
			return "", fmt.Errorf("%s not yet a replica of %s (%s)", r.Name, c.Masters[i].Name, v)
		}
	}
	return v, nil
}
