package topology

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// The Sentinel topology: masters n1.., one replica each r1.., Sentinels
// s1.., all real redis-server processes, and clients that find the master
// through Sentinel with go-redis's failover client, as production clients do.
//
// The crux is addressing. Sentinel learns addresses from the servers
// themselves (the master's INFO lists its replicas; Sentinels announce
// themselves in hello messages; +switch-master names the promoted replica)
// and hands them to everybody alike. So each process is known by one
// announced address, and that address is a router (nemesis.Router) in
// front of it, not the server's own port:
//
//	server X    announced address A(X) = its router; real port only used by the links
//	n_i, r_i    replica-announce-ip 127.0.0.1, replica-announce-port port(A(X))
//	s_k         sentinel announce-ip 127.0.0.1, announce-port port(A(s_k))
//	monitor     sentinel monitor n_i 127.0.0.1 port(A(n_i))
//	replication r_i REPLICAOF A(n_i) (after a failover Sentinel sends A(promoted))
//
// Every Redis process binds its outgoing connections to a source IP of its
// own (bind-source-addr 127.0.0.x), and the router of X hands a connection
// from process P to the link P>X (a toxiproxy in front of X's real port).
// So s1's connections to n1 cross link s1>n1, r1's replication crosses
// r1>n1, and a fault on one pair touches that pair only.
//
// Clients do not need source IPs: their failover client's Dialer receives
// the announced address Sentinel gave, maps it back to the server's name,
// and dials the client host's own link h>X. The connection reports A(X) as
// its remote address, so go-redis recognises the master's connections when
// +switch-master tells it to drop the others.
//
// Fault targets: links are named host>server, with hosts h1.. (clients),
// r1.. (replicas), s1.. (Sentinels) and n1.. (masters, once demoted they
// replicate too) and servers n1.., r1.., s1..; e.g. {kind: partition,
// hosts: [s1, s2, s3, r1], nodes: [n1]} cuts n1 from the Sentinels and
// its replica and from nobody else.
type sentinelSet struct {
	servers   *cluster.Servers
	sentinels []*cluster.Process
	masters   []string          // monitored master names (n1..)
	announced map[string]string // server name → announced address
	byAddr    map[string]string // announced address → server name
	subs      []*redis.Client
	pubsubs   []*redis.PubSub
	subWG     sync.WaitGroup
	// events receives Sentinel events once the run records them.
	events atomic.Pointer[func(text string)]
	// dialed receives (client, server) on every client dial to a data server.
	dialed atomic.Pointer[func(client int, server string)]
}

// sourceIP is the loopback address a Redis process binds its outgoing
// connections to: 127.0.<kind>.<index>, kind 1 masters, 2 replicas, 3
// Sentinels. All of 127.0.0.0/8 is local on Linux.
func sourceIP(name string) string {
	kind := map[byte]int{'n': 1, 'r': 2, 's': 3}[name[0]]
	i, _ := strconv.Atoi(name[1:])
	return fmt.Sprintf("127.0.%d.%d", kind, i)
}

func startSentinelTopology(ctx context.Context, o Options) (_ *Topology, err error) {
	nodes := o.Nodes
	if k, rerr := cluster.Resolve(o.Backend); rerr != nil || k != cluster.RedisServer {
		return nil, fmt.Errorf("scenario %s needs Sentinel, which only the redis-server backend has", o.Scenario)
	}
	if nodes > 250 || o.Sentinel.Sentinels > 250 {
		return nil, fmt.Errorf("scenario %s: at most 250 masters and 250 sentinels", o.Scenario)
	}
	t := &Topology{Net: nemesis.NewNetwork(), Replicas: map[string]*cluster.Process{}}
	ss := &sentinelSet{announced: map[string]string{}, byAddr: map[string]string{}}
	t.sentinel = ss
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	b := &sentinelBuild{t: t, ss: ss, o: o, real: map[string]string{}}
	// Each step needs the one before: routers give the announced addresses
	// the servers are started with, replicas need their masters' real
	// addresses, Sentinels the replicas, and the clients' links everything.
	steps := []struct {
		stage string
		run   func() error
	}{
		{"backend", func() error { return b.startRouters(nodes) }},
		{"servers", func() error { return b.startServers(ctx, nodes) }},
		{"replicas", func() error { return b.startReplicas(ctx) }},
		{"sentinels", func() error { return b.startSentinels(ctx) }},
		{"subscribe", func() error { return b.linkAndSubscribe(ctx) }},
	}
	for _, st := range steps {
		if err := st.run(); err != nil {
			return nil, err
		}
		if err := o.stage(st.stage); err != nil {
			return nil, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := cluster.WaitSentinelsReady(wctx, ss.sentinels, ss.masters, 1); err != nil {
		return nil, fmt.Errorf("sentinels not ready: %w", err)
	}
	if err := o.stage("ready"); err != nil {
		return nil, err
	}
	o.Log.Info("sentinel topology up", "masters", nodes, "sentinels", len(ss.sentinels), "quorum", o.Sentinel.Quorum)
	return t, nil
}

// sentinelBuild is the state shared by the steps that build a Sentinel
// topology: the servers' names and their real addresses as they appear.
type sentinelBuild struct {
	t         *Topology
	ss        *sentinelSet
	o         Options
	data, all []string          // data servers (n, r), every server
	real      map[string]string // server name -> its real address
	servers   *cluster.Servers
}

// startRouters gives every server a router (the address others know it by) and a
// loopback source address, so the links can tell who is connecting.
func (b *sentinelBuild) startRouters(nodes int) error {
	t, ss := b.t, b.ss
	for i := 1; i <= nodes; i++ {
		b.data = append(b.data, fmt.Sprintf("n%d", i), fmt.Sprintf("r%d", i))
		ss.masters = append(ss.masters, fmt.Sprintf("n%d", i))
	}
	b.all = append(b.all, b.data...)
	for k := 1; k <= b.o.Sentinel.Sentinels; k++ {
		b.all = append(b.all, fmt.Sprintf("s%d", k))
	}
	for _, name := range b.all {
		r, err := t.Net.AddRouter(name)
		if err != nil {
			return err
		}
		ss.announced[name], ss.byAddr[r.Addr] = r.Addr, name
		t.Net.SetSource(sourceIP(name), name)
	}
	return nil
}

// startServers starts the masters, each announcing its router's address so
// replicas and Sentinels reach it through the links.
func (b *sentinelBuild) startServers(ctx context.Context, nodes int) error {
	ss, o := b.ss, b.o
	extra := func(name string) []string {
		_, port, _ := net.SplitHostPort(ss.announced[name])
		args := []string{"--protected-mode", "no", "--bind-source-addr", sourceIP(name),
			"--replica-announce-ip", "127.0.0.1", "--replica-announce-port", port}
		if m := o.MinReplicas; m != nil {
			args = append(args, "--min-replicas-to-write", strconv.Itoa(m.ToWrite),
				"--min-replicas-max-lag", strconv.Itoa(int(m.MaxLag/time.Second)))
		}
		return args
	}
	cl, err := cluster.Start(ctx, cluster.RedisServer, cluster.Options{Nodes: nodes, Log: b.o.Log,
		ServerClock: o.ServerClock, ExtraArgs: extra})
	if err != nil {
		return fmt.Errorf("start redis-server backend: %w", err)
	}
	b.t.Cluster = cl
	b.servers = cl.(*cluster.Servers)
	ss.servers = b.servers
	for _, n := range cl.Nodes() {
		b.real[n.Name] = n.Addr
	}
	b.t.Hosts, b.t.HostOf = o.Hosts, o.HostOf
	return nil
}

// startReplicas starts one replica per master. Replicas come first (their real
// addresses are needed for the links), then the links to them; replication
// waits for its link r_i>n_i.
func (b *sentinelBuild) startReplicas(ctx context.Context) error {
	t, ss := b.t, b.ss
	var reps []*cluster.Process
	for _, m := range ss.masters {
		if _, err := t.Net.AddLink("r"+m[1:], m, b.real[m]); err != nil {
			return err
		}
		rep, err := b.servers.AddReplica(ctx, ss.announced[m])
		if err != nil {
			return fmt.Errorf("replica of %s: %w", m, err)
		}
		b.real[rep.Name] = rep.Addr
		t.Replicas[m] = rep
		reps = append(reps, rep)
		// The old master replicates from the promoted replica once Sentinel
		// demotes it.
		if _, err := t.Net.AddLink(m, rep.Name, rep.Addr); err != nil {
			return err
		}
	}
	for i, rep := range reps {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := rep.WaitOnline(wctx, b.real[ss.masters[i]])
		cancel()
		if err != nil {
			return fmt.Errorf("replica %s: %w", rep.Name, err)
		}
	}
	return nil
}

// startSentinels starts the Sentinels, at once. Each knows the others from
// the start (their announced addresses and run ids in its sentinel.conf),
// as it would after their first hello messages: the run need not wait
// 2 s for those. Every link a Sentinel dials (to the data servers, to the
// other Sentinels) exists before it starts: a dial that found no link
// would be refused, and Sentinel dials again only a second later.
func (b *sentinelBuild) startSentinels(ctx context.Context) error {
	t, ss, sn := b.t, b.ss, b.o.Sentinel
	var masters []cluster.Node
	for _, m := range ss.masters {
		masters = append(masters, cluster.Node{Name: m, Addr: ss.announced[m]})
	}
	opts := make([]cluster.SentinelOptions, sn.Sentinels)
	for k := range opts {
		name := fmt.Sprintf("s%d", k+1)
		opts[k] = cluster.SentinelOptions{Masters: masters, Quorum: sn.Quorum, DownAfter: sn.DownAfter,
			FailoverTimeout: sn.FailoverTimeout, SourceAddr: sourceIP(name), Announce: ss.announced[name],
			ID: cluster.NewSentinelID()}
	}
	for k := range opts {
		for j := range opts {
			if j != k {
				opts[k].Peers = append(opts[k].Peers, cluster.Peer{Addr: opts[j].Announce, ID: opts[j].ID})
			}
		}
	}
	sents, err := b.servers.NewSentinels(opts)
	if err != nil {
		return fmt.Errorf("sentinels: %w", err)
	}
	for _, s := range sents {
		b.real[s.Name] = s.Addr
		for _, srv := range b.data {
			if _, err := t.Net.AddLink(s.Name, srv, b.real[srv]); err != nil {
				return err
			}
		}
	}
	for _, a := range sents {
		for _, s := range sents {
			if a != s {
				if _, err := t.Net.AddLink(a.Name, s.Name, s.Addr); err != nil {
					return err
				}
			}
		}
	}
	if err := cluster.StartSentinels(ctx, sents); err != nil {
		return fmt.Errorf("sentinels: %w", err)
	}
	for _, s := range sents {
		if s.Addr != b.real[s.Name] {
			// Its port was taken before it bound it: it moved.
			b.real[s.Name] = s.Addr
			for _, l := range t.Net.Links(func(l *nemesis.Link) bool { return l.Node == s.Name }) {
				if err := l.SetUpstream(s.Addr); err != nil {
					return err
				}
			}
		}
	}
	ss.sentinels = sents
	return nil
}

// linkAndSubscribe links every client host to every server, then follows
// the Sentinels' events.
func (b *sentinelBuild) linkAndSubscribe(ctx context.Context) error {
	t, ss := b.t, b.ss
	for h := 1; h <= t.Hosts; h++ {
		for _, srv := range b.all {
			if _, err := t.Net.AddLink(fmt.Sprintf("h%d", h), srv, b.real[srv]); err != nil {
				return err
			}
		}
	}
	if err := ss.subscribe(ctx); err != nil {
		return fmt.Errorf("sentinel events: %w", err)
	}
	return nil
}

// subscribe follows every Sentinel's own event stream (PSUBSCRIBE * on a
// direct connection, outside the links: the harness's view must not be cut
// by the faults it injects).
func (ss *sentinelSet) subscribe(ctx context.Context) error {
	for _, s := range ss.sentinels {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
		ps := c.PSubscribe(ctx, "*")
		if _, err := ps.Receive(ctx); err != nil {
			c.Close()
			return fmt.Errorf("sentinel %s: psubscribe: %w", s.Name, err)
		}
		ss.subs, ss.pubsubs = append(ss.subs, c), append(ss.pubsubs, ps)
		name := s.Name
		ss.subWG.Add(1)
		go func() {
			defer ss.subWG.Done()
			for msg := range ps.Channel() {
				if f := ss.events.Load(); f != nil {
					(*f)(name + " " + msg.Channel + " " + ss.rename(msg.Payload))
				}
			}
		}()
	}
	return nil
}

var announcedAddr = regexp.MustCompile(`127\.0\.0\.1[: ](\d+)`)

// rename replaces announced addresses in an event with server names, so
// "+switch-master n1 127.0.0.1 4001 127.0.0.1 4002" reads
// "+switch-master n1 n1 r1".
func (ss *sentinelSet) rename(payload string) string {
	return announcedAddr.ReplaceAllStringFunc(payload, func(m string) string {
		if name, ok := ss.byAddr["127.0.0.1:"+m[len("127.0.0.1 "):]]; ok {
			return name
		}
		return m
	})
}

// mappedConn is a client connection through a link that reports the
// announced address it stands for as its remote address.
type mappedConn struct {
	net.Conn
	remote net.Addr
}

// RemoteAddr is the announced address.
func (c mappedConn) RemoteAddr() net.Addr { return c.remote }

// dialAnnounced dials, for a client on host, the server an announced
// address stands for (byAddr; what names such servers in an error) through
// the host's own link to it; the connection reports addr as its remote
// address. dialed, when set, is told the server's name once connected.
func (t *Topology) dialAnnounced(ctx context.Context, network, addr, host string, timeout time.Duration,
	byAddr map[string]string, what string, dialed func(name string)) (net.Conn, error) {
	name, ok := byAddr[addr]
	if !ok {
		return nil, fmt.Errorf("dial %s: not the announced address of any %s", addr, what)
	}
	link := t.Net.Link(host, name)
	if link == nil {
		return nil, fmt.Errorf("dial %s (%s): no link from %s", addr, name, host)
	}
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, network, link.Addr)
	if err != nil {
		return nil, err
	}
	if dialed != nil {
		dialed(name)
	}
	ra, _ := net.ResolveTCPAddr("tcp", addr)
	return mappedConn{c, ra}, nil
}

// connect opens one failover client per master for a client on host; every
// address Sentinel hands out is dialed through the host's own link to that
// server, Sentinels included.
func (ss *sentinelSet) connect(t *Topology, client int, host string, timeout time.Duration, hooks Hooks) []redis.UniversalClient {
	var sentinels []string
	for _, s := range ss.sentinels {
		sentinels = append(sentinels, ss.announced[s.Name])
	}
	var out []redis.UniversalClient
	for _, m := range ss.masters {
		dialed := func(name string) {
			if !strings.HasPrefix(name, "s") {
				if f := ss.dialed.Load(); f != nil {
					(*f)(client, name)
				}
			}
		}
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			return t.dialAnnounced(ctx, network, addr, host, timeout, ss.byAddr, "server", dialed)
		}
		rdb := redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: m, SentinelAddrs: sentinels, Dialer: dial,
			MaxRetries: -1, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
			PoolSize: 4, ContextTimeoutEnabled: true, Protocol: 2, DialerRetries: 1, DisableIdentity: true,
		})
		// A rejected link refuses the dial before the failover client asks
		// Sentinel where the master is: the link is the master's own (h>n),
		// which split-votes cuts. The command points name the master (n1),
		// wherever Sentinel says it is now.
		addHooks(rdb, hooks.Pause, hooks.refuse(t.Net.Link(host, m)), hooks.points(m))
		out = append(out, rdb)
	}
	return out
}

func (ss *sentinelSet) close() {
	for _, ps := range ss.pubsubs {
		ps.Close()
	}
	for _, c := range ss.subs {
		c.Close()
	}
	ss.subWG.Wait()
}

// Sentinels are the Sentinel processes (none outside the Sentinel
// topology).
func (t *Topology) Sentinels() []*cluster.Process {
	if t.sentinel == nil {
		return nil
	}
	return t.sentinel.sentinels
}

// NameOf is the server an announced address stands for under Sentinel
// ("" for none).
func (t *Topology) NameOf(addr string) string {
	if t.sentinel == nil {
		return ""
	}
	return t.sentinel.byAddr[addr]
}
