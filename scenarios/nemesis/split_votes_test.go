package nemesis

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// splitNet is the target tests' hosts and clients (tHosts, tClients) on
// nodes masters.
func splitNet(t *testing.T, nodes int) *Env {
	t.Helper()
	cl := fakeCluster{}
	for i := 1; i <= nodes; i++ {
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
	return &Env{Net: n, Cluster: cl, Clients: tClients, ClientHost: tHostOf, Control: &recControl{}}
}

// TestSplitVotes: each side is cut from the other side's half of the
// unshared masters, both ways, so each reaches the shared masters plus its
// own half (a bare majority with one shared master of an odd count);
// healing removes every toxic; a side left empty cuts nothing.
func TestSplitVotes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes int
		spec  Spec
		links []string
	}{
		{"five masters, h1 alone", 5, Spec{Nodes: []string{"n1"}, Hosts: []string{"h1"}},
			append(linksOf([]string{"h1"}, []string{"n4", "n5"}), linksOf([]string{"h2", "h3", "h4"}, []string{"n2", "n3"})...)},
		{"three masters, two hosts a side", 3, Spec{Nodes: []string{"n1"}, Hosts: []string{"h1", "h2"}},
			append(linksOf([]string{"h1", "h2"}, []string{"n3"}), linksOf([]string{"h3", "h4"}, []string{"n2"})...)},
		{"one side only", 5, Spec{Nodes: []string{"n1"}, Hosts: allHosts}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := splitNet(t, tc.nodes)
			s := tc.spec
			s.Kind = "split-votes"
			f, err := Build(s)
			if err != nil {
				t.Fatal(err)
			}
			heal, tg, err := f.Inject(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(tc.links)
			sort.Strings(want)
			got := slices.Clone(tg.Links)
			sort.Strings(got)
			if !slices.Equal(got, want) {
				t.Fatalf("links %v, want %v", got, want)
			}
			for _, l := range env.Net.Links(nil) {
				if cut := slices.Contains(want, l.Name()); l.Refused() != cut {
					t.Errorf("%s: refused %v, cut %v", l.Name(), l.Refused(), cut)
				}
			}
			if len(want) == 0 {
				if tg.Count() != 0 {
					t.Errorf("one side only: targets %s, want nothing", tg)
				}
				return
			}
			if err := heal(); err != nil {
				t.Fatal(err)
			}
			for _, l := range env.Net.Links(nil) {
				if l.Refused() {
					t.Errorf("after heal %s: still refused", l.Name())
				}
			}
		})
	}
}

// TestSplitVotesAppliesToQuorumsOnly: the kind is left out of a run on one
// master, every other kind is not; a spec without its sides is refused.
func TestSplitVotesAppliesToQuorumsOnly(t *testing.T) {
	split := Spec{Kind: "split-votes", Nodes: []string{"n1"}, Hosts: []string{"h1"}}
	partition := Spec{Kind: "partition", Nodes: []string{"n1"}}
	for _, tc := range []struct {
		s     Spec
		nodes int
		want  bool
	}{{split, 1, false}, {split, 5, true}, {partition, 1, true}, {partition, 5, true}} {
		if got := Applies(tc.s, tc.nodes); got != tc.want {
			t.Errorf("Applies(%s, %d nodes) = %v, want %v", tc.s.Kind, tc.nodes, got, tc.want)
		}
	}
	for _, s := range []Spec{
		{Kind: "split-votes", Hosts: []string{"h1"}},
		{Kind: "split-votes", Nodes: []string{"n1"}},
		{Kind: "split-votes", Nodes: []string{"n1"}, Hosts: []string{"r1"}},
		{Kind: "split-votes", Nodes: []string{"s1"}, Hosts: []string{"h1"}},
	} {
		if _, err := Build(s); err == nil {
			t.Errorf("%+v: built", s)
		}
	}
}

// TestRefusedLinkResets: a refused link drops its live connections and
// resets new ones (a client process dialing it sees the reset); once
// accepted again it relays.
func TestRefusedLinkResets(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	n := NewNetwork()
	defer n.Close()
	l, err := n.AddLink("h1", "n1", echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	roundTrip := func() error {
		c, err := net.DialTimeout("tcp", l.Addr, time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		b := make([]byte, 4)
		_, err = io.ReadFull(c, b)
		return err
	}
	live, err := net.DialTimeout("tcp", l.Addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := roundTrip(); err != nil {
		t.Fatalf("before: %v", err)
	}
	l.Refuse(true)
	if err := roundTrip(); err == nil {
		t.Error("a refused link relayed")
	}
	_ = live.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := live.Read(make([]byte, 1)); err == nil {
		t.Error("a live connection survived the refusal")
	}
	l.Refuse(false)
	if err := roundTrip(); err != nil {
		t.Errorf("after: %v", err)
	}
}
