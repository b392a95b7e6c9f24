package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

func TestKillRestartsEmpty(t *testing.T) {
	env, _ := testNet(t, 1, 1)
	ctx := context.Background()
	c := client(t, env, "h1", "n1", 300*time.Millisecond)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	heal := inject(t, env, Spec{Kind: "kill", Nodes: []string{"n1"}})
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered by a killed server")
	}
	if err := heal(); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, "k").Err(); err != redis.Nil {
		t.Fatalf("after restart GET k: %v, want nil (no persistence)", err)
	}
}

func TestServerPauseStallsCommands(t *testing.T) {
	env, _ := testNet(t, 1, 1)
	ctx := context.Background()
	c := client(t, env, "h1", "n1", 200*time.Millisecond)
	c.Ping(ctx)
	heal := inject(t, env, Spec{Kind: "server-pause", Nodes: []string{"n1"}})
	if err := c.Ping(ctx).Err(); !isTimeout(err) {
		t.Errorf("PING to a SIGSTOPped server: %v, want a timeout", err)
	}
	heal()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Errorf("after SIGCONT: %v", err)
	}
}

func TestServerClockJumpExpiresKeys(t *testing.T) {
	s := cluster.StartForTestWith(t, cluster.Options{Nodes: 1, ServerClock: true})
	n := NewNetwork()
	t.Cleanup(n.Close)
	if _, err := n.AddLink("h1", "n1", s.Nodes()[0].Addr); err != nil {
		t.Fatal(err)
	}
	env := &Env{Net: n, Cluster: s, Clients: 1, ClientHost: func(int) string { return "h1" }, Rand: rand.New(rand.NewPCG(1, 1))}
	ctx := context.Background()
	c := client(t, env, "h1", "n1", time.Second)
	const ttl = 2 * time.Second
	if err := c.Set(ctx, "lock", "me", ttl).Err(); err != nil {
		t.Fatal(err)
	}
	heal := inject(t, env, Spec{Kind: "server-clock", Nodes: []string{"n1"}, Offset: ttl})
	defer heal()
	// Redis expires a key when its clock is strictly past the deadline, in
	// milliseconds: let a few go by.
	time.Sleep(5 * time.Millisecond)
	if err := c.Get(ctx, "lock").Err(); err != redis.Nil {
		t.Fatalf("GET after a +TTL jump: %v, want nil (expired at once)", err)
	}
}

// TestFailoverLosesUnreplicatedWrite: with the replication link cut, a
// write the master acknowledged is gone once the replica is promoted and
// the clients are redirected to it.
func TestFailoverLosesUnreplicatedWrite(t *testing.T) {
	env, master, rep := replicatedEnv(t)
	ctx := context.Background()
	c := client(t, env, "h1", master.Name, time.Second)
	if err := c.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Let "before" replicate, then cut replication and write "after".
	deadline := time.Now().Add(5 * time.Second)
	direct := redis.NewClient(&redis.Options{Addr: rep.Addr})
	defer direct.Close()
	for direct.Get(ctx, "before").Err() != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	inject(t, env, Spec{Kind: "partition", Hosts: []string{"r1"}, Nodes: []string{master.Name}})
	if err := c.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatalf("master did not acknowledge: %v", err)
	}
	inject(t, env, Spec{Kind: "failover", Nodes: []string{master.Name}})
	var got []string
	for _, k := range []string{"before", "after"} {
		v, err := c.Get(ctx, k).Result()
		if err != nil && err != redis.Nil {
			// The first command after the redirect may meet the dropped connection.
			v, err = c.Get(ctx, k).Result()
		}
		got = append(got, fmt.Sprintf("%s=%q(%v)", k, v, err))
		if k == "before" && v != "1" {
			t.Errorf("replicated write lost: %v", got)
		}
		if k == "after" && err != redis.Nil {
			t.Errorf("unreplicated acknowledged write survived failover: %v", got)
		}
	}
	if err := c.Set(ctx, "new", "1", 0).Err(); err != nil {
		t.Errorf("promoted replica refuses writes: %v", err)
	}
}

// TestKillSyncedWaitsForTheReplica: with replication slowed well past the
// client's round trip, a write acknowledged just before a kill-synced is
// on the replica when the kill is done (a plain kill would lose it); with
// replication cut, kill-synced fails, leaves the master running and its
// writes unpaused.
func TestKillSyncedWaitsForTheReplica(t *testing.T) {
	env, master, rep := replicatedEnv(t)
	ctx := context.Background()
	c := client(t, env, "h1", master.Name, time.Second)
	direct := redis.NewClient(&redis.Options{Addr: rep.Addr})
	defer direct.Close()

	// Replication cut: the premise fails, the master lives on.
	heal := inject(t, env, Spec{Kind: "partition", Hosts: []string{"r1"}, Nodes: []string{master.Name}})
	if err := c.Set(ctx, "cut", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	f, err := Build(Spec{Kind: "kill-synced", Nodes: []string{master.Name}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Inject(ctx, env); err == nil {
		t.Fatal("kill-synced with replication cut: no error")
	}
	if err := c.Set(ctx, "after-refusal", "1", 0).Err(); err != nil {
		t.Fatalf("master after a refused kill-synced: %v (still paused or killed?)", err)
	}
	if err := heal(); err != nil {
		t.Fatal(err)
	}

	// Replication slowed to 300 ms each way: the write is acknowledged
	// long before the replica has it.
	inject(t, env, Spec{Kind: "latency", Hosts: []string{"r1"}, Nodes: []string{master.Name}, Latency: 300 * time.Millisecond})
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if direct.Get(ctx, "k").Err() != redis.Nil {
		t.Fatal("the replica has the write at once: the latency did not slow replication, the test proves nothing")
	}
	inject(t, env, Spec{Kind: "kill-synced", Nodes: []string{master.Name}})
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered by a killed master")
	}
	if v, err := direct.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("replica after kill-synced: GET k = %q, %v; want the acknowledged write", v, err)
	}
}

// replicatedEnv starts one master with a replica whose replication runs
// through link r1>n1 (a fault target), client host h1 linked to the master,
// and returns the faults' Env once the replica acknowledges writes.
func replicatedEnv(t *testing.T) (*Env, cluster.Node, *cluster.Process) {
	t.Helper()
	s := cluster.StartForTest(t, 1)
	n := NewNetwork()
	t.Cleanup(n.Close)
	master := s.Nodes()[0]
	if _, err := n.AddLink("h1", master.Name, master.Addr); err != nil {
		t.Fatal(err)
	}
	rl, err := n.AddLink("r1", master.Name, master.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := s.AddReplica(ctx, rl.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.WaitOnline(ctx, master.Addr); err != nil {
		t.Fatal(err)
	}
	env := &Env{Net: n, Cluster: s, Clients: 1, ClientHost: func(int) string { return "h1" },
		Rand: rand.New(rand.NewPCG(1, 1)), Replicas: map[string]*cluster.Process{master.Name: rep}}
	return env, master, rep
}
