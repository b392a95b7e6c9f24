package scenarios

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// linkNames are the links a network holds, in the order they were made.
func linkNames(n *nemesis.Network) []string {
	var out []string
	for _, l := range n.Links(nil) {
		out = append(out, l.Name())
	}
	return out
}

// TestLayoutIsTheTopology: the plan's layout names the links the topology
// builds (masters, replicas and client hosts shared by several clients),
// and what each fault's preview says it will apply to is what its
// injection on the real topology reports, for every target family (links,
// clients, servers, failover) and a target the run does not have.
func TestLayoutIsTheTopology(t *testing.T) {
	cluster.StartForTest(t, 1) // a CI failure without redis-server, a skip elsewhere
	spec, err := spec.Parse("layout.yaml", []byte(`name: layout
nodes: 2
replicas: 1
clients: 3
hosts: 2
duration: 1s
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Impl: "set-nx-px", Backend: cluster.RedisServer, Log: slog.New(slog.DiscardHandler)}
	plan, err := Compile(spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topo, err := startTopology(ctx, plan, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	layout := plan.layout()
	if got := linkNames(topo.Net); !reflect.DeepEqual(got, layout.Links) {
		t.Fatalf("the topology built links %v, the plan's layout says %v", got, layout.Links)
	}
	env := &nemesis.Env{Net: topo.Net, Cluster: topo.Cluster, ClientHost: topo.HostOf, Clients: plan.Clients,
		Control: nopControl{}, Rand: rand.New(rand.NewPCG(1, 2)), Replicas: topo.Replicas}
	for _, f := range []nemesis.Spec{
		{Kind: "latency", Hosts: []string{"h2"}, Latency: time.Millisecond},
		{Kind: "partition", Clients: []int{1}, Nodes: []string{"n2"}},
		{Kind: "blackhole", Nodes: []string{"n1"}},
		{Kind: "lost-reply", Hosts: []string{"r1"}},
		{Kind: "pause", Clients: []int{0, 9}},
		{Kind: "server-pause", Nodes: []string{"n2", "n7"}},
		{Kind: "failover", Nodes: []string{"n1"}}, // last: it does not heal
	} {
		want, ok := nemesis.Preview(f, layout)
		if !ok {
			t.Fatalf("%s: no preview", flow(f))
		}
		fault, err := nemesis.Build(f)
		if err != nil {
			t.Fatal(err)
		}
		heal, got, err := fault.Inject(ctx, env)
		if err != nil {
			t.Fatalf("%s: %v", flow(f), err)
		}
		if err := heal(); err != nil {
			t.Fatalf("%s: heal: %v", flow(f), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: injected on %s, the preview said %s", flow(f), got, want)
		}
	}
	if _, ok := nemesis.Preview(nemesis.Spec{Kind: "pause", Pick: "client"}, layout); ok {
		t.Error("a pick has a preview: it is drawn as the run goes")
	}
}
