package topology

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// The Redis Cluster topology: masters n1..nM serving the slots, replica
// r_i of n_i, all real redis-server processes in cluster mode, and clients
// with go-redis's cluster client, as production clients do.
//
// Addressing is the Sentinel topology's (sentinel.go): the nodes learn
// each other's addresses from each other (gossip, CLUSTER SLOTS, MOVED and
// ASK redirects) and hand them to everybody alike, so each node announces
// routers (nemesis.Router), not its own ports:
//
//	node X     cluster-announce-ip 127.0.0.1, cluster-announce-port port(A(X)),
//	           cluster-announce-bus-port port(B(X)), bind-source-addr 127.0.<1|2>.i
//	A(X)       X's data router: node P's connection goes to link P>X (replication, MIGRATE)
//	B(X)       X's bus router: node P's connection goes to bus link P>X bus (gossip, votes)
//
// so a fault naming hosts [n2, n3] and nodes [n1] cuts n1 from n2 and n3
// on the bus and on the data port, and from nobody else. Clients need no
// source address: their cluster client's Dialer maps the announced address
// it was given (seed, CLUSTER SLOTS, a redirect) back to the node and dials
// the client host's own link h>X.
type clusterSet struct {
	servers   *cluster.Servers
	rc        *cluster.RedisCluster
	names     []string          // n1..nM, r1..rM
	announced map[string]string // node name → announced data address
	byAddr    map[string]string // announced data address → node name
	// dialed receives (client, node) when a client's acquire (SET) is
	// answered by a node.
	dialed atomic.Pointer[func(client int, node string)]
	// events receives the cluster's events once the run records them.
	events atomic.Pointer[func(text string)]
	stop   chan struct{}
	wg     sync.WaitGroup
}

// ClusterNames are a cluster's node names: masters n1..n<masters>, then
// replicas r1.. (replicas of them each).
func ClusterNames(masters, replicas int) []string {
	var out []string
	for i := 1; i <= masters; i++ {
		out = append(out, fmt.Sprintf("n%d", i))
	}
	for i := 1; i <= masters*replicas; i++ {
		out = append(out, fmt.Sprintf("r%d", i))
	}
	return out
}

func startClusterTopology(ctx context.Context, o Options) (_ *Topology, err error) {
	if k, rerr := cluster.Resolve(o.Backend); rerr != nil || k != cluster.RedisServer {
		return nil, fmt.Errorf("scenario %s needs a Redis Cluster, which only the redis-server backend has", o.Scenario)
	}
	t := &Topology{Net: nemesis.NewNetwork(), Replicas: map[string]*cluster.Process{}}
	cs := &clusterSet{names: ClusterNames(o.Cluster.Masters, o.Cluster.Replicas), announced: map[string]string{}, byAddr: map[string]string{},
		stop: make(chan struct{})}
	t.rcluster = cs
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	b := &clusterBuild{t: t, cs: cs, o: o, bus: map[string]string{}}
	steps := []struct {
		stage string
		run   func() error
	}{
		{"backend", b.startRouters},
		{"servers", func() error { return b.startServers(ctx) }},
		{"replicas", func() error { return b.startReplicas(ctx) }},
		{"cluster", func() error { return b.form(ctx) }},
		{"subscribe", b.linkClients},
	}
	for _, st := range steps {
		if err := st.run(); err != nil {
			return nil, err
		}
		if err := o.stage(st.stage); err != nil {
			return nil, err
		}
	}
	cs.watch()
	o.Log.Info("redis cluster up", "masters", o.Cluster.Masters, "replicas", o.Cluster.Replicas, "node_timeout", o.Cluster.NodeTimeout)
	return t, nil
}

// clusterBuild is the state the steps share: the announced bus addresses.
type clusterBuild struct {
	t   *Topology
	cs  *clusterSet
	o   Options
	bus map[string]string // node name → announced bus address
}

// startRouters gives every node its data and bus routers and a source
// address.
func (b *clusterBuild) startRouters() error {
	for _, name := range b.cs.names {
		r, err := b.t.Net.AddRouter(name)
		if err != nil {
			return err
		}
		br, err := b.t.Net.AddBusRouter(name)
		if err != nil {
			return err
		}
		b.cs.announced[name], b.cs.byAddr[r.Addr], b.bus[name] = r.Addr, name, br.Addr
		b.t.Net.SetSource(sourceIP(name), name)
	}
	return nil
}

// nodeArgs are a node's announced addresses and source address.
func (b *clusterBuild) nodeArgs(name string) []string {
	_, port, _ := net.SplitHostPort(b.cs.announced[name])
	_, bus, _ := net.SplitHostPort(b.bus[name])
	return []string{"--protected-mode", "no", "--bind-source-addr", sourceIP(name),
		"--cluster-announce-ip", "127.0.0.1", "--cluster-announce-port", port, "--cluster-announce-bus-port", bus}
}

func (b *clusterBuild) startServers(ctx context.Context) error {
	cl, err := cluster.Start(ctx, cluster.RedisServer, cluster.Options{Nodes: b.o.Cluster.Masters, Log: b.o.Log,
		ServerClock: b.o.ServerClock, ExtraArgs: b.nodeArgs,
		Cluster: &cluster.ClusterOptions{NodeTimeout: b.o.Cluster.NodeTimeout}})
	if err != nil {
		return fmt.Errorf("start redis-server backend: %w", err)
	}
	b.t.Cluster = cl
	b.cs.servers = cl.(*cluster.Servers)
	b.t.Hosts, b.t.HostOf = b.o.Hosts, b.o.HostOf
	return nil
}

func (b *clusterBuild) startReplicas(ctx context.Context) error {
	n := b.o.Cluster.Masters * b.o.Cluster.Replicas
	if n == 0 {
		return nil
	}
	if _, err := b.cs.servers.AddClusterReplicas(ctx, n); err != nil {
		return fmt.Errorf("cluster replicas: %w", err)
	}
	return nil
}

// form links every node to every other (data and bus), then forms the
// cluster through them and waits until it is ready.
func (b *clusterBuild) form(ctx context.Context) error {
	masters, replicas := b.cs.servers.Procs(), b.cs.servers.Replicas()
	all := append(append([]*cluster.Process(nil), masters...), replicas...)
	announce := map[string]cluster.Announced{}
	for _, p := range all {
		announce[p.Name] = cluster.Announced{Data: b.cs.announced[p.Name], Bus: b.bus[p.Name]}
		for _, q := range all {
			if p == q {
				continue
			}
			if _, err := b.t.Net.AddLink(p.Name, q.Name, q.Addr); err != nil {
				return err
			}
			if _, err := b.t.Net.AddBusLink(p.Name, q.Name, q.BusAddr()); err != nil {
				return err
			}
		}
	}
	rc, err := cluster.FormCluster(ctx, masters, replicas, announce)
	if err != nil {
		return fmt.Errorf("redis cluster: %w", err)
	}
	b.cs.rc = rc
	for i, r := range replicas {
		b.t.Replicas[masters[i].Name] = r
	}
	return nil
}

// linkClients links every client host to every node.
func (b *clusterBuild) linkClients() error {
	for h := 1; h <= b.t.Hosts; h++ {
		for _, p := range b.cs.rc.Masters {
			if _, err := b.t.Net.AddLink(fmt.Sprintf("h%d", h), p.Name, p.Addr); err != nil {
				return err
			}
		}
		for _, p := range b.cs.rc.Replicas {
			if _, err := b.t.Net.AddLink(fmt.Sprintf("h%d", h), p.Name, p.Addr); err != nil {
				return err
			}
		}
	}
	return nil
}

// connect gives a client on host one cluster client: every address the
// cluster hands out is dialed through the host's own link to that node.
// The pause hook holds whole commands (redirects included); the refusal
// and command-point hooks sit on each node's own client.
func (cs *clusterSet) connect(t *Topology, client int, host string, timeout time.Duration, hooks Hooks) []redis.UniversalClient {
	var seeds []string
	for _, m := range cs.rc.Masters {
		seeds = append(seeds, cs.announced[m.Name])
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return t.dialAnnounced(ctx, network, addr, host, timeout, cs.byAddr, "cluster node", nil)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: seeds, Dialer: dial, MaxRedirects: clusterTries, MaxRetryBackoff: 100 * time.Millisecond,
		ClusterStateReloadInterval: slotMapEvery,
		MaxRetries:                 -1, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		PoolSize: 4, ContextTimeoutEnabled: true, Protocol: 2, DialerRetries: 1, DisableIdentity: true,
	})
	addHooks(rdb, hooks.Pause)
	rdb.OnNewNode(func(node *redis.Client) {
		name := cs.byAddr[node.Options().Addr]
		// Paused here too: a lock may send on one node's connection
		// (set-nx-px's SET and WAIT), outside the cluster client's hooks.
		addHooks(node, noResend{}, hooks.Pause, hooks.refuse(t.Net.Link(host, name)), acquiredOn{client: client, node: name, cs: cs},
			hooks.points(name))
	})
	// The first command makes the cluster client fetch the slot map and
	// the command table (COMMAND, to find each command's keys) from any
	// node: done now, on a fault-free network, and not by a lock's first
	// acquire under a partition, where it would wait out timeouts on the
	// nodes it cannot reach, which no long-running client does.
	wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = rdb.Exists(wctx, "lockstorm:warm-up").Err()
	return []redis.UniversalClient{rdb}
}

// slotMapEvery is how old a client's slot map may grow before it asks the
// cluster again (CLUSTER SLOTS, through its own links). go-redis reloads
// on a MOVED redirect, and otherwise every 60 s by default: a client whose
// master was killed would go on dialing the dead node for a minute, long
// past any scenario, where production clients (and go-redis's own
// periodic reload) find the promoted replica.
const slotMapEvery = 250 * time.Millisecond

// clusterTries is how many times the cluster client sends one command: a
// redirect (MOVED, ASK) or a failed attempt (a dead node, CLUSTERDOWN)
// tries again, after a backoff growing from 8 ms to 100 ms (go-redis: to
// 512 ms; a client then took up to 2.7 s past the promotion to try the
// new master, under stress-ng), so a command rides out much of a failover
// as a client configured for one would, where go-redis's default of 3
// tries gives up within 30 ms and the run would count a flood of errors
// instead of acquires.
const clusterTries = 12

// noResend keeps the cluster client from sending a command again when the
// reply to the one it sent was lost (a read timeout, a connection reset or
// closed while the reply was awaited): that command may have run, and a
// SET NX sent again finds the key its first copy took and answers "not
// set", so the lock reported "not acquired" while its own token held the
// key (cluster-reshard x set-nx-px, seen as lost-acquire on 2 of 16 seeds
// at --parallel 10 beside stress-ng: one SET took 5.2 s of retries). go-
// redis's cluster client resends on any network error (shouldRetry), as
// its clients do in production; the harness's client keeps its tries for
// what proves the command did not run (a failed dial, MOVED, ASK,
// CLUSTERDOWN, TRYAGAIN) and gives a lost reply to the lock as what it is,
// an unknown outcome.
type noResend struct{}

// errReplyLost is a lost reply as the cluster client must see it: not a
// net.Error and not EOF, so it is not retried.
type errReplyLost struct{ cause string }

func (e errReplyLost) Error() string {
	return "reply lost, outcome unknown (not resent): " + e.cause
}

// DialHook implements redis.Hook.
func (noResend) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessPipelineHook implements redis.Hook.
func (noResend) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// ProcessHook implements redis.Hook.
func (noResend) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if replyLost(err) {
			err = errReplyLost{cause: err.Error()}
			cmd.SetErr(err)
		}
		return err
	}
}

// replyLost says err came after the command was sent and before its reply
// was read. A failed dial sent nothing; an error reply is an answer.
func replyLost(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Op != "dial"
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// acquiredOn tells the run which node answered a client's SET, so the
// witness can name the node each of two holders acquired on.
type acquiredOn struct {
	client int
	node   string
	cs     *clusterSet
}

// DialHook implements redis.Hook.
func (h acquiredOn) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (h acquiredOn) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && cmd.Name() == "set" {
			if f := h.cs.dialed.Load(); f != nil {
				(*f)(h.client, h.node)
			}
		}
		return err
	}
}

// ProcessPipelineHook implements redis.Hook.
func (h acquiredOn) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// watchEvery is how often the watcher asks each node for its view.
const watchEvery = 100 * time.Millisecond

// watch follows the cluster as its nodes see it, on direct connections
// outside the links, and reports what changes (see clusterEvents).
func (cs *clusterSet) watch() {
	cs.wg.Add(1)
	go func() {
		defer cs.wg.Done()
		w := &clusterWatch{cs: cs, state: map[string]string{}, conns: map[string]*cluster.Conn{}}
		defer w.close()
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		for {
			select {
			case <-cs.stop:
				return
			case <-t.C:
				w.poll()
			}
		}
	}()
}

// clusterWatch is what the watcher saw last, per "node fact" key.
type clusterWatch struct {
	cs    *clusterSet
	state map[string]string
	conns map[string]*cluster.Conn // by address, kept across polls
}

// conn is the watcher's connection to addr.
func (w *clusterWatch) conn(addr string) *cluster.Conn {
	c := w.conns[addr]
	if c == nil {
		c = &cluster.Conn{Addr: addr}
		w.conns[addr] = c
	}
	return c
}

func (w *clusterWatch) close() {
	for _, c := range w.conns {
		c.Close()
	}
}

// poll asks every running node for its view and reports, as "WHO EVENT
// ...": WHO +fail X / -fail X (WHO's view flags X failed, or no longer),
// WHO +switch-master OLD WHO (WHO became a master; it replicated OLD),
// WHO +convert-to-slave WHO NEW (WHO became a replica of NEW), WHO
// +cluster-down / -cluster-down (WHO refuses queries: a minority master
// after cluster-node-timeout, or accepts them again).
func (w *clusterWatch) poll() {
	for _, p := range append(append([]*cluster.Process(nil), w.cs.rc.Masters...), w.cs.rc.Replicas...) {
		if !p.Running() {
			continue
		}
		c := w.conn(p.Addr)
		ns, err := c.Nodes()
		if err != nil {
			continue
		}
		for _, n := range ns {
			name := w.cs.rc.Name(n.ID)
			if n.Has("myself") {
				role, master := "master", ""
				if n.Has("slave") {
					role, master = "slave", w.cs.rc.Name(n.MasterID)
				}
				w.change(p.Name+" role", role+" "+master, func(old string) string {
					if role == "master" && strings.HasPrefix(old, "slave ") {
						return fmt.Sprintf("%s +switch-master %s %s", p.Name, strings.TrimPrefix(old, "slave "), p.Name)
					}
					if role == "slave" && old != "" && !strings.HasPrefix(old, "slave ") {
						return fmt.Sprintf("%s +convert-to-slave %s %s", p.Name, p.Name, master)
					}
					return ""
				})
				continue
			}
			failed := strconv.FormatBool(n.Has("fail"))
			w.change(p.Name+" fail "+name, failed, func(old string) string {
				if failed == "true" {
					return fmt.Sprintf("%s +fail %s", p.Name, name)
				}
				if old == "true" {
					return fmt.Sprintf("%s -fail %s", p.Name, name)
				}
				return ""
			})
		}
		if st, err := c.ClusterState(); err == nil {
			w.change(p.Name+" state", st, func(old string) string {
				if st == "fail" {
					return p.Name + " +cluster-down"
				}
				if old == "fail" {
					return p.Name + " -cluster-down"
				}
				return ""
			})
		}
	}
}

// change records fact's new value and reports event(old) when it changed
// (and event says something).
func (w *clusterWatch) change(fact, now string, event func(old string) string) {
	old, seen := w.state[fact]
	if seen && old == now {
		return
	}
	w.state[fact] = now
	if !seen && now != "true" && now != "fail" {
		return // the starting state
	}
	if text := event(old); text != "" {
		if f := w.cs.events.Load(); f != nil {
			(*f)(text)
		}
	}
}

func (cs *clusterSet) close() {
	close(cs.stop)
	cs.wg.Wait()
}
