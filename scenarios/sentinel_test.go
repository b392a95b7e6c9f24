package scenarios

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios/client"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// TestSentinelTopology starts the Sentinel topology on real processes, has a
// client find the master through the Sentinels (every connection through
// the client host's links), cuts the Sentinels' own links to n1 (not the
// client's), and checks that the Sentinels fail over to r1 and the client
// follows: so the Sentinels' traffic really crosses their links, and
// addresses Sentinel hands out map onto the client's links.
func TestSentinelTopology(t *testing.T) {
	cluster.StartForTest(t, 1) // a CI failure without redis-server, a skip elsewhere
	spec, err := spec.Parse("sentinel.yaml", []byte(`name: sentinel
replicas: 1
sentinel: {sentinels: 3, quorum: 2, down_after: 300ms, failover_timeout: 2s}
clients: 1
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
	start := time.Now()
	topo, err := startTopology(ctx, plan, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	t.Logf("topology up in %v", time.Since(start))
	if got, want := linkNames(topo.Net), plan.layout().Links; !slices.Equal(got, want) {
		t.Errorf("the Sentinel topology built links\n%v\nthe plan's layout says\n%v", got, want)
	}
	var events []string
	evc := make(chan string, 1000)
	ev := func(s string) { evc <- s }
	var mu sync.Mutex
	var dialedList []string
	dialed := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), dialedList...) }
	dl := func(_ int, server string) { mu.Lock(); dialedList = append(dialedList, server); mu.Unlock() }
	topo.Follow(ev, dl)

	rdb := topo.Connect(0, "h1", time.Second, clientHooks(&client.Pauser{}, nil))[0]
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != "v1" {
		t.Fatalf("GET through the failover client: %q, %v", v, err)
	}
	if d := dialed(); len(d) == 0 || d[0] != "n1" {
		t.Fatalf("client dialed %v, want n1 first", d)
	}
	// The client's link to n1 carries the command: cutting it stalls it.
	cut, _ := nemesis.Build(nemesis.Spec{Kind: "partition", Hosts: []string{"h1"}, Nodes: []string{"n1"}})
	heal, _, err := cut.Inject(ctx, &nemesis.Env{Net: topo.Net, Cluster: topo.Cluster})
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "k", "lost", 0).Err(); err == nil {
		t.Fatal("SET went through although the client's link to n1 was cut")
	}
	if err := heal(); err != nil {
		t.Fatal(err)
	}

	// Cut n1 from the Sentinels only: they must see it down and promote r1.
	part, _ := nemesis.Build(nemesis.Spec{Kind: "partition", Hosts: []string{"s1", "s2", "s3"}, Nodes: []string{"n1"}})
	if _, _, err := part.Inject(ctx, &nemesis.Env{Net: topo.Net, Cluster: topo.Cluster}); err != nil {
		t.Fatal(err)
	}
	cut0 := time.Now()
	deadline := time.After(30 * time.Second)
	for switched := false; !switched; {
		select {
		case e := <-evc:
			events = append(events, e)
			switched = strings.Contains(e, "+switch-master n1 n1 r1")
		case <-deadline:
			t.Fatalf("no +switch-master to r1 within 30 s; events: %v", events)
		}
	}
	t.Logf("failover %v after the cut; events: %v", time.Since(cut0), events)
	for _, want := range []string{"+sdown master n1", "+odown master n1", "+promoted-slave slave r1"} {
		found := false
		for _, e := range events {
			found = found || strings.Contains(e, want)
		}
		if !found {
			t.Errorf("no %q event", want)
		}
	}
	// Every Sentinel learns the new configuration (from the leader's hello
	// messages) within a few seconds.
	for _, sn := range topo.Sentinels() {
		for i := 0; ; i++ {
			addr, err := sn.MasterAddr("n1")
			if err == nil && topo.NameOf(addr) == "r1" {
				break
			}
			if i == 100 {
				t.Fatalf("%s says the master is %s (%s), %v; want r1", sn.Name, addr, topo.NameOf(addr), err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// The client follows to r1 (its pooled connection to n1 still works,
	// n1 being cut from the Sentinels only, until +switch-master drops it).
	for i := 0; ; i++ {
		err := rdb.Set(ctx, "k", "v2", 0).Err()
		if d := dialed(); err == nil && len(d) > 0 && d[len(d)-1] == "r1" {
			break
		}
		if i == 100 {
			t.Fatalf("client still on %v: %v", dialed(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rep := topo.Replicas["n1"]
	info, err := rep.ReplicationInfo()
	if err != nil || info["role"] != "master" {
		t.Fatalf("r1 role %q, %v", info["role"], err)
	}
}

// TestFailoverTimes reads the milestones from a history.
func TestFailoverTimes(t *testing.T) {
	ev := func(ms int64, v string) history.Op {
		return history.Op{Process: history.NemesisProcess, Client: -1, Type: history.Ok, F: history.FSentinel, Value: v, Time: ms * 1e6}
	}
	h := history.History{
		{Process: history.NemesisProcess, Client: -1, Type: history.Ok, F: history.FStart, Value: "partition", Time: 0},
		{Process: history.NemesisProcess, Client: -1, Type: history.Ok, F: history.FStart, Value: "kill", Time: 100e6},
		{Process: 1, Client: 1, Type: history.Ok, F: history.FAcquire, Time: 200e6},
		ev(600, "s1 +sdown master n1 n1"),
		ev(1000, "s2 +odown master n1 n1 #quorum 2/2"),
		ev(1001, "s2 +try-failover master n1 n1"),
		ev(2000, "s2 +promoted-slave slave r1 r1 @ n1 n1"),
		{Process: 2, Client: 2, Type: history.Ok, F: history.FAcquire, Time: 2050e6},
		ev(2100, "s2 +switch-master n1 n1 r1"),
	}
	got := failoverTimes(h)
	want := FailoverTimes{FaultMs: 100, SdownMs: 600, OdownMs: 1000, TryFailoverMs: 1001, PromotedMs: 2000, SwitchMasterMs: 2100, AcquireAfterMs: 2050}
	if *got != want {
		t.Fatalf("got %+v, want %+v", *got, want)
	}
}
