package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// The target tests run on one topology: 6 clients grouped onto 4 hosts
// (client c on host h(c mod 4 + 1), so h1 carries clients 0 and 4, h2
// carries 1 and 5), 3 nodes, and replica r1 of n1 with its replication
// link r1>n1.
const (
	tClients = 6
	tHosts   = 4
)

func tHostOf(c int) string { return fmt.Sprintf("h%d", c%tHosts+1) }

// The seed of every pick below; expectations of picks are drawn from a
// fresh source with the same seed, the way resolve documents it draws
// (client: one IntN over the clients; minority/majority: one Perm over the
// nodes).
const pickSeed1, pickSeed2 = 7, 11

func pickRand() *rand.Rand { return rand.New(rand.NewPCG(pickSeed1, pickSeed2)) }

// fakeCluster stands where no server is needed: network and client faults
// only read the node names.
type fakeCluster struct{ nodes []cluster.Node }

func (f fakeCluster) Kind() string          { return "fake" }
func (f fakeCluster) Nodes() []cluster.Node { return f.nodes }
func (f fakeCluster) Close() error          { return nil }

// recControl records what client faults do to clients.
type recControl struct {
	mu      sync.Mutex
	calls   []string
	holders []int
}

func (r *recControl) add(f string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf(f, a...))
}
func (r *recControl) Holders() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.holders)
}
func (r *recControl) Pause(c int)                      { r.add("pause %d", c) }
func (r *recControl) Resume(c int)                     { r.add("resume %d", c) }
func (r *recControl) Crash(c int)                      { r.add("crash %d", c) }
func (r *recControl) ClockJump(c int, d time.Duration) { r.add("jump %d %v", c, d) }
func (r *recControl) ClockDrift(c int, rate float64)   { r.add("drift %d %v", c, rate) }

// take returns the calls so far and forgets them.
func (r *recControl) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

// targetNet builds the topology with links to upstream addresses that are
// never dialled (no traffic flows in these tests; toxics are installed on
// the proxies all the same).
func targetNet(t *testing.T) (*Env, *recControl) {
	t.Helper()
	cl := fakeCluster{}
	for i := 1; i <= 3; i++ {
		cl.nodes = append(cl.nodes, cluster.Node{Name: fmt.Sprintf("n%d", i), Addr: "127.0.0.1:1"})
	}
	n := NewNetwork()
	t.Cleanup(n.Close)
	for h := 1; h <= tHosts; h++ {
		for _, node := range cl.nodes {
			if _, err := n.AddLink(fmt.Sprintf("h%d", h), node.Name, node.Addr); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := n.AddLink("r1", "n1", "127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	ctl := &recControl{}
	return &Env{Net: n, Cluster: cl, Clients: tClients, ClientHost: tHostOf, Control: ctl,
		Replicas: map[string]*cluster.Process{"n1": {Node: cluster.Node{Name: "r1"}}}}, ctl
}

// linksOf lists host>node for every host and node given, sorted.
func linksOf(hosts, nodes []string) []string {
	var out []string
	for _, h := range hosts {
		for _, n := range nodes {
			out = append(out, h+">"+n)
		}
	}
	sort.Strings(out)
	return out
}

var (
	allHosts = []string{"h1", "h2", "h3", "h4"}
	allNodes = []string{"n1", "n2", "n3"}
	allCls   = []int{0, 1, 2, 3, 4, 5}
)

// clientsOn lists the clients of the given hosts.
func clientsOn(hosts ...string) []int {
	var out []int
	for c := 0; c < tClients; c++ {
		if slices.Contains(hosts, tHostOf(c)) {
			out = append(out, c)
		}
	}
	return out
}

// toxicsOn lists a link's toxics as type/stream, sorted.
func toxicsOn(l *Link) []string {
	var out []string
	for _, tx := range l.proxy.Toxics.GetToxicArray() {
		w := tx.(*toxics.ToxicWrapper)
		out = append(out, w.Type+"/"+w.Stream)
	}
	sort.Strings(out)
	return out
}

type wantTargets struct {
	links    []string
	clients  []int
	nodes    []string
	replicas []string
	missing  []string
	picked   string
}

func (w wantTargets) check(t *testing.T, got Targets) {
	t.Helper()
	links := slices.Clone(got.Links)
	sort.Strings(links)
	if !slices.Equal(links, w.links) {
		t.Errorf("links %v, want %v", links, w.links)
	}
	if !slices.Equal(got.Clients, w.clients) {
		t.Errorf("clients %v, want %v", got.Clients, w.clients)
	}
	if !slices.Equal(got.Nodes, w.nodes) {
		t.Errorf("nodes %v, want %v", got.Nodes, w.nodes)
	}
	if !slices.Equal(got.Replicas, w.replicas) {
		t.Errorf("replicas %v, want %v", got.Replicas, w.replicas)
	}
	if !slices.Equal(got.Missing, w.missing) {
		t.Errorf("missing %v, want %v", got.Missing, w.missing)
	}
	if got.Picked != w.picked {
		t.Errorf("picked %q, want %q", got.Picked, w.picked)
	}
}

// networkSelectors are the target selections every network kind is tried
// with, and what each must touch on the test topology.
func networkSelectors() []struct {
	name string
	sel  Spec
	want wantTargets
} {
	pc := pickRand().IntN(tClients)
	pcHost := tHostOf(pc)
	perm := pickRand().Perm(3)
	minority := []string{allNodes[perm[0]]}
	majority := []string{allNodes[perm[0]], allNodes[perm[1]]}
	sort.Strings(majority)
	// Links to picked nodes include r1>n1 when n1 is among them.
	withRepl := func(nodes []string) ([]string, []string) {
		l := linksOf(allHosts, nodes)
		if slices.Contains(nodes, "n1") {
			l = append(l, "r1>n1")
			sort.Strings(l)
			return l, []string{"r1"}
		}
		return l, nil
	}
	minLinks, minRepl := withRepl(minority)
	majLinks, majRepl := withRepl(majority)
	allLinks, _ := withRepl(allNodes)
	return []struct {
		name string
		sel  Spec
		want wantTargets
	}{
		{"everything", Spec{}, wantTargets{links: allLinks, clients: allCls, replicas: []string{"r1"}}},
		{"host h2", Spec{Hosts: []string{"h2"}}, wantTargets{links: linksOf([]string{"h2"}, allNodes), clients: []int{1, 5}}},
		{"client 3 alone on h4", Spec{Clients: []int{3}}, wantTargets{links: linksOf([]string{"h4"}, allNodes), clients: []int{3}}},
		// A link is a host's: client 4 shares h1 with client 0, and a
		// fault on client 4's links hits client 0 as well.
		{"client 4 shares h1", Spec{Clients: []int{4}}, wantTargets{links: linksOf([]string{"h1"}, allNodes), clients: []int{0, 4}}},
		{"node n2", Spec{Nodes: []string{"n2"}}, wantTargets{links: linksOf(allHosts, []string{"n2"}), clients: allCls}},
		{"host h1 to node n3", Spec{Hosts: []string{"h1"}, Nodes: []string{"n3"}}, wantTargets{links: []string{"h1>n3"}, clients: []int{0, 4}}},
		{"replication link", Spec{Hosts: []string{"r1"}}, wantTargets{links: []string{"r1>n1"}, replicas: []string{"r1"}}},
		{"pick client", Spec{Pick: "client"}, wantTargets{links: linksOf([]string{pcHost}, allNodes), clients: clientsOn(pcHost),
			picked: fmt.Sprintf("client %d", pc)}},
		{"pick client to node n2", Spec{Pick: "client", Nodes: []string{"n2"}}, wantTargets{links: []string{pcHost + ">n2"}, clients: clientsOn(pcHost),
			picked: fmt.Sprintf("client %d", pc)}},
		{"pick minority", Spec{Pick: "minority"}, wantTargets{links: minLinks, clients: allCls, replicas: minRepl, picked: fmt.Sprintf("nodes %v", minority)}},
		{"pick majority", Spec{Pick: "majority"}, wantTargets{links: majLinks, clients: allCls, replicas: majRepl, picked: fmt.Sprintf("nodes %v", majority)}},
		{"clients 0 and 99", Spec{Clients: []int{0, 99}}, wantTargets{links: linksOf([]string{"h1"}, allNodes), clients: []int{0, 4}, missing: []string{"client 99"}}},
		// Client 99 would wrap onto h4 (99 mod 4 + 1): it must touch nothing.
		{"client 99", Spec{Clients: []int{99}}, wantTargets{missing: []string{"client 99"}}},
		{"client 99 to node n1", Spec{Clients: []int{99}, Nodes: []string{"n1"}}, wantTargets{missing: []string{"client 99"}}},
		{"client -1", Spec{Clients: []int{-1}}, wantTargets{missing: []string{"client -1"}}},
		{"host h99", Spec{Hosts: []string{"h99"}}, wantTargets{missing: []string{"host h99"}}},
		{"node n9", Spec{Nodes: []string{"n9"}}, wantTargets{missing: []string{"node n9"}}},
	}
}

// TestNetworkFaultTargets: every network kind, with every selection,
// installs its toxics on exactly the links it reports (and on no other),
// reports the clients behind those links, and removes them all on heal.
func TestNetworkFaultTargets(t *testing.T) {
	env, _ := targetNet(t)
	both := func(typ string) []string { return []string{typ + "/downstream", typ + "/upstream"} }
	kinds := []struct {
		name   string
		spec   Spec
		toxics []string // per touched link
	}{
		{"latency", Spec{Kind: "latency", Latency: 20 * time.Millisecond}, both("latency")},
		{"latency upstream", Spec{Kind: "latency", Latency: 20 * time.Millisecond, Stream: "upstream"}, []string{"latency/upstream"}},
		{"bandwidth", Spec{Kind: "bandwidth", Rate: 10}, both("bandwidth")},
		{"blackhole", Spec{Kind: "blackhole"}, both("timeout")},
		{"partition both", Spec{Kind: "partition"}, both("timeout")},
		{"partition to-server", Spec{Kind: "partition", Direction: "to-server"}, []string{"timeout/upstream"}},
		{"partition from-server", Spec{Kind: "partition", Direction: "from-server"}, []string{"timeout/downstream"}},
		{"lost-reply", Spec{Kind: "lost-reply"}, []string{"timeout/downstream"}},
		{"reset", Spec{Kind: "reset"}, both("reset_peer")},
	}
	for _, k := range kinds {
		for _, sc := range networkSelectors() {
			t.Run(k.name+"/"+sc.name, func(t *testing.T) {
				s := sc.sel
				s.Kind, s.Latency, s.Rate, s.Stream, s.Direction = k.spec.Kind, k.spec.Latency, k.spec.Rate, k.spec.Stream, k.spec.Direction
				f, err := Build(s)
				if s.Kind == "partition" && sc.name == "everything" {
					// A partition of everything from everything is refused.
					if err == nil {
						t.Fatal("partition without targets accepted")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				env.Rand = pickRand()
				heal, got, err := f.Inject(context.Background(), env)
				if err != nil {
					t.Fatal(err)
				}
				sc.want.check(t, got)
				if got.Count() == 0 != (len(sc.want.links) == 0) {
					t.Errorf("Count() = %d with links %v", got.Count(), got.Links)
				}
				for _, l := range env.Net.Links(nil) {
					var want []string
					if slices.Contains(sc.want.links, l.Name()) {
						want = k.toxics
					}
					if have := toxicsOn(l); !slices.Equal(have, want) {
						t.Errorf("link %s has toxics %v, want %v", l.Name(), have, want)
					}
				}
				if err := heal(); err != nil {
					t.Fatal(err)
				}
				for _, l := range env.Net.Links(nil) {
					if have := toxicsOn(l); len(have) > 0 {
						t.Errorf("after heal, link %s keeps %v", l.Name(), have)
					}
				}
			})
		}
	}
}

// TestPickClientIsOneHost: over many seeds, a network fault with pick:
// client touches exactly the picked client's host's links, and the pick
// varies with the seed (it is drawn, not fixed).
func TestPickClientIsOneHost(t *testing.T) {
	env, _ := targetNet(t)
	f, err := Build(Spec{Kind: "latency", Latency: time.Millisecond, Pick: "client"})
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[string]bool{}
	for seed := uint64(0); seed < 20; seed++ {
		env.Rand = rand.New(rand.NewPCG(seed, 1))
		heal, got, err := f.Inject(context.Background(), env)
		if err != nil {
			t.Fatal(err)
		}
		var c int
		if _, err := fmt.Sscanf(got.Picked, "client %d", &c); err != nil {
			t.Fatalf("picked %q", got.Picked)
		}
		h := tHostOf(c)
		hosts[h] = true
		wantTargets{links: linksOf([]string{h}, allNodes), clients: clientsOn(h), picked: got.Picked}.check(t, got)
		if err := heal(); err != nil {
			t.Fatal(err)
		}
	}
	if len(hosts) < 2 {
		t.Errorf("20 seeds picked only hosts %v", hosts)
	}
}

// TestClientFaultTargets: pause, crash and client-clock act on exactly the
// clients they report, and healing undoes exactly that.
func TestClientFaultTargets(t *testing.T) {
	env, ctl := targetNet(t)
	pc := pickRand().IntN(tClients)
	selectors := []struct {
		name string
		sel  Spec
		want wantTargets
	}{
		{"client 2", Spec{Clients: []int{2}}, wantTargets{clients: []int{2}}},
		{"host h1", Spec{Hosts: []string{"h1"}}, wantTargets{clients: []int{0, 4}}},
		{"client 1 and host h3", Spec{Clients: []int{1}, Hosts: []string{"h3"}}, wantTargets{clients: []int{1, 2}}},
		{"pick client", Spec{Pick: "client"}, wantTargets{clients: []int{pc}, picked: fmt.Sprintf("client %d", pc)}},
		{"clients 5 and 99", Spec{Clients: []int{5, 99}}, wantTargets{clients: []int{5}, missing: []string{"client 99"}}},
		{"client 99", Spec{Clients: []int{99}}, wantTargets{missing: []string{"client 99"}}},
		{"host h99", Spec{Hosts: []string{"h99"}}, wantTargets{missing: []string{"host h99"}}},
		// The replication host exists but carries no client.
		{"replica host", Spec{Hosts: []string{"r1"}}, wantTargets{}},
	}
	kinds := []struct {
		spec      Spec
		act, undo func(c int) []string
	}{
		{Spec{Kind: "pause"},
			func(c int) []string { return []string{fmt.Sprintf("pause %d", c)} },
			func(c int) []string { return []string{fmt.Sprintf("resume %d", c)} }},
		{Spec{Kind: "crash"},
			func(c int) []string { return []string{fmt.Sprintf("crash %d", c)} },
			func(int) []string { return nil }},
		{Spec{Kind: "client-clock", Offset: time.Second, Drift: 0.5},
			func(c int) []string { return []string{fmt.Sprintf("jump %d 1s", c), fmt.Sprintf("drift %d 0.5", c)} },
			func(c int) []string { return []string{fmt.Sprintf("jump %d -1s", c), fmt.Sprintf("drift %d 0", c)} }},
	}
	for _, k := range kinds {
		for _, sc := range selectors {
			t.Run(k.spec.Kind+"/"+sc.name, func(t *testing.T) {
				s := sc.sel
				s.Kind, s.Offset, s.Drift = k.spec.Kind, k.spec.Offset, k.spec.Drift
				f, err := Build(s)
				if err != nil {
					t.Fatal(err)
				}
				env.Rand = pickRand()
				ctl.take()
				heal, got, err := f.Inject(context.Background(), env)
				if err != nil {
					t.Fatal(err)
				}
				sc.want.check(t, got)
				var want, wantUndo []string
				for _, c := range sc.want.clients {
					want = append(want, k.act(c)...)
					wantUndo = append(wantUndo, k.undo(c)...)
				}
				if calls := ctl.take(); !slices.Equal(calls, want) {
					t.Errorf("inject did %v, want %v", calls, want)
				}
				if err := heal(); err != nil {
					t.Fatal(err)
				}
				if calls := ctl.take(); !slices.Equal(calls, wantUndo) {
					t.Errorf("heal did %v, want %v", calls, wantUndo)
				}
			})
		}
	}
}

// probe says how a node answers a PING within a short timeout: "ok",
// "refused" (killed) or "timeout" (paused).
func probe(addr string) string {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 150 * time.Millisecond,
		ReadTimeout: 150 * time.Millisecond, WriteTimeout: 150 * time.Millisecond, DialerRetries: 1})
	defer c.Close()
	err := c.Ping(context.Background()).Err()
	switch {
	case err == nil:
		return "ok"
	case isTimeout(err):
		return "timeout"
	}
	return "refused"
}

// TestServerFaultTargets: kill, server-pause and server-clock act on
// exactly the nodes they report (on real redis-server), the others are
// untouched, and healing restores every node.
func TestServerFaultTargets(t *testing.T) {
	s := cluster.StartForTestWith(t, cluster.Options{Nodes: 3, ServerClock: true})
	env := &Env{Cluster: s, Clients: tClients, ClientHost: tHostOf}
	perm := pickRand().Perm(3)
	minority := []string{allNodes[perm[0]]}
	majority := []string{allNodes[perm[0]], allNodes[perm[1]]}
	sort.Strings(majority)
	selectors := []struct {
		name string
		sel  Spec
		want wantTargets
	}{
		{"node n2", Spec{Nodes: []string{"n2"}}, wantTargets{nodes: []string{"n2"}}},
		{"nodes n3 n1", Spec{Nodes: []string{"n3", "n1"}}, wantTargets{nodes: []string{"n1", "n3"}}},
		{"pick minority", Spec{Pick: "minority"}, wantTargets{nodes: minority, picked: fmt.Sprintf("nodes %v", minority)}},
		{"pick majority", Spec{Pick: "majority"}, wantTargets{nodes: majority, picked: fmt.Sprintf("nodes %v", majority)}},
		{"nodes n1 n9", Spec{Nodes: []string{"n1", "n9"}}, wantTargets{nodes: []string{"n1"}, missing: []string{"node n9"}}},
		{"node n9", Spec{Nodes: []string{"n9"}}, wantTargets{missing: []string{"node n9"}}},
	}
	kinds := []struct {
		spec Spec
		// state is a node's observable state under the fault when hit
		// (true) or not.
		state func(i int, hit bool) (got, want string)
	}{
		{Spec{Kind: "kill"}, func(i int, hit bool) (string, string) {
			return probe(s.Nodes()[i].Addr), map[bool]string{true: "refused", false: "ok"}[hit]
		}},
		{Spec{Kind: "server-pause"}, func(i int, hit bool) (string, string) {
			return probe(s.Nodes()[i].Addr), map[bool]string{true: "timeout", false: "ok"}[hit]
		}},
		{Spec{Kind: "server-clock", Offset: time.Hour}, func(i int, hit bool) (string, string) {
			return s.ClockOffset(i).String(), map[bool]string{true: "1h0m0s", false: "0s"}[hit]
		}},
	}
	for _, k := range kinds {
		for _, sc := range selectors {
			t.Run(k.spec.Kind+"/"+sc.name, func(t *testing.T) {
				sp := sc.sel
				sp.Kind, sp.Offset = k.spec.Kind, k.spec.Offset
				f, err := Build(sp)
				if err != nil {
					t.Fatal(err)
				}
				env.Rand = pickRand()
				heal, got, err := f.Inject(context.Background(), env)
				if err != nil {
					t.Fatal(err)
				}
				sc.want.check(t, got)
				for i, n := range s.Nodes() {
					if have, want := k.state(i, slices.Contains(sc.want.nodes, n.Name)); have != want {
						t.Errorf("%s under the fault: %s, want %s", n.Name, have, want)
					}
				}
				if err := heal(); err != nil {
					t.Fatal(err)
				}
				for i, n := range s.Nodes() {
					if have, want := k.state(i, false); have != want {
						t.Errorf("%s after heal: %s, want %s", n.Name, have, want)
					}
				}
			})
		}
	}
}

// TestFailoverTargets: a failover reports the master it killed, the replica
// it promoted and the client links it redirected (not the replication
// link), and those links now lead to the replica; a node that does not
// exist fails over nothing.
func TestFailoverTargets(t *testing.T) {
	s := cluster.StartForTest(t, 2)
	n := NewNetwork()
	t.Cleanup(n.Close)
	for _, h := range []string{"h1", "h2"} {
		for _, node := range s.Nodes() {
			if _, err := n.AddLink(h, node.Name, node.Addr); err != nil {
				t.Fatal(err)
			}
		}
	}
	rl, err := n.AddLink("r1", "n1", s.Nodes()[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rep, err := s.AddReplica(ctx, rl.Addr)
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Net: n, Cluster: s, Clients: 2, ClientHost: func(c int) string { return fmt.Sprintf("h%d", c+1) },
		Rand: pickRand(), Replicas: map[string]*cluster.Process{"n1": rep}}
	inj := func(nodes ...string) (Targets, error) {
		f, err := Build(Spec{Kind: "failover", Nodes: nodes})
		if err != nil {
			t.Fatal(err)
		}
		_, got, err := f.Inject(ctx, env)
		return got, err
	}
	got, err := inj("n9")
	if err != nil {
		t.Fatal(err)
	}
	wantTargets{missing: []string{"node n9"}}.check(t, got)
	if _, err := inj("n2"); err == nil {
		t.Error("failover of n2, which has no replica, succeeded")
	}
	got, err = inj("n1")
	if err != nil {
		t.Fatal(err)
	}
	wantTargets{links: []string{"h1>n1", "h2>n1"}, nodes: []string{"n1"}, replicas: []string{"r1"}}.check(t, got)
	for _, l := range n.Links(nil) {
		want := s.Nodes()[0].Addr
		if l.Node == "n2" {
			want = s.Nodes()[1].Addr
		} else if l.Host != "r1" {
			want = rep.Addr
		}
		if up := l.Upstream(); up != want {
			t.Errorf("link %s leads to %s, want %s", l.Name(), up, want)
		}
	}
}

// TestPickHolder: pick: holder draws among the clients holding a lease at
// the injection, and falls back to any client (saying so) when none holds;
// either way one draw, so a seed replays it.
func TestPickHolder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		holders []int
		want    func(c int) bool
		suffix  string
	}{
		{"one holder", []int{4}, func(c int) bool { return c == 4 }, "(holder)"},
		{"two holders", []int{1, 5}, func(c int) bool { return c == 1 || c == 5 }, "(holder)"},
		{"out of range ignored", []int{9, 2}, func(c int) bool { return c == 2 }, "(holder)"},
		{"none", nil, func(c int) bool { return c >= 0 && c < tClients }, "(no holder)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctl := &recControl{holders: tc.holders}
			for seed := uint64(1); seed <= 20; seed++ {
				env := &Env{Clients: tClients, ClientHost: tHostOf, Control: ctl, Rand: rand.New(rand.NewPCG(seed, 2))}
				sel := Spec{Kind: "pause", Pick: "holder"}.resolve(env)
				if len(sel.clients) != 1 || !tc.want(sel.clients[0]) {
					t.Fatalf("seed %d: picked %v (%s) among holders %v", seed, sel.clients, sel.picked, tc.holders)
				}
				if !strings.HasSuffix(sel.picked, tc.suffix) {
					t.Errorf("seed %d: picked %q, want it to end in %q", seed, sel.picked, tc.suffix)
				}
			}
		})
	}
}
