package nemesis

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// testNet puts hosts h1..hN in front of every node of a real cluster.
func testNet(t *testing.T, nodes, hosts int) (*Env, *cluster.Servers) {
	t.Helper()
	s := cluster.StartForTest(t, nodes)
	n := NewNetwork()
	t.Cleanup(n.Close)
	for h := 1; h <= hosts; h++ {
		for _, node := range s.Nodes() {
			if _, err := n.AddLink(fmt.Sprintf("h%d", h), node.Name, node.Addr); err != nil {
				t.Fatal(err)
			}
		}
	}
	env := &Env{Net: n, Cluster: s, Clients: hosts, ClientHost: func(c int) string { return fmt.Sprintf("h%d", c+1) },
		Rand: rand.New(rand.NewPCG(1, 2))}
	return env, s
}

func client(t *testing.T, env *Env, host, node string, timeout time.Duration) *redis.Client {
	t.Helper()
	l := env.Net.Link(host, node)
	if l == nil {
		t.Fatalf("no link %s>%s", host, node)
	}
	c := redis.NewClient(&redis.Options{Addr: l.Addr, MaxRetries: -1, ReadTimeout: timeout, WriteTimeout: timeout, DialTimeout: timeout})
	t.Cleanup(func() { c.Close() })
	return c
}

func inject(t *testing.T, env *Env, s Spec) Heal {
	t.Helper()
	f, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	heal, tg, err := f.Inject(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Count() == 0 {
		t.Fatalf("%+v applied to nothing", s)
	}
	return heal
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestLatencyDelaysPing(t *testing.T) {
	env, _ := testNet(t, 1, 2)
	ctx := context.Background()
	c1 := client(t, env, "h1", "n1", 2*time.Second)
	c2 := client(t, env, "h2", "n1", 2*time.Second)
	c1.Ping(ctx) // connect first so the dial is not measured
	heal := inject(t, env, Spec{Kind: "latency", Latency: 50 * time.Millisecond, Hosts: []string{"h1"}, Stream: "downstream"})
	start := time.Now()
	if err := c1.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("PING through a 50 ms link took %v", d)
	}
	start = time.Now()
	if err := c2.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 40*time.Millisecond {
		t.Errorf("PING on the unaffected link took %v", d)
	}
	if err := heal(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	c1.Ping(ctx)
	if d := time.Since(start); d > 40*time.Millisecond {
		t.Errorf("PING after heal took %v", d)
	}
}

func TestBlackholeTimesOut(t *testing.T) {
	env, _ := testNet(t, 1, 2)
	ctx := context.Background()
	c1 := client(t, env, "h1", "n1", 200*time.Millisecond)
	c2 := client(t, env, "h2", "n1", 200*time.Millisecond)
	c1.Ping(ctx)
	heal := inject(t, env, Spec{Kind: "blackhole", Hosts: []string{"h1"}})
	if err := c1.Set(ctx, "k", "v", 0).Err(); !isTimeout(err) {
		t.Errorf("blackholed SET: err = %v, want a timeout", err)
	}
	if err := c2.Ping(ctx).Err(); err != nil {
		t.Errorf("unaffected link: %v", err)
	}
	heal()
	if err := c1.Ping(ctx).Err(); err != nil {
		t.Errorf("after heal: %v", err)
	}
}

func TestLostReplyLeavesKeyWritten(t *testing.T) {
	env, _ := testNet(t, 1, 2)
	ctx := context.Background()
	c1 := client(t, env, "h1", "n1", 200*time.Millisecond)
	c2 := client(t, env, "h2", "n1", 200*time.Millisecond)
	c1.Ping(ctx)
	heal := inject(t, env, Spec{Kind: "lost-reply", Hosts: []string{"h1"}})
	defer heal()
	ok, err := c1.SetNX(ctx, "lock", "c1", time.Minute).Result()
	if !isTimeout(err) {
		t.Fatalf("SETNX with lost reply: ok=%v err=%v, want a timeout", ok, err)
	}
	got, err := c2.Get(ctx, "lock").Result()
	if err != nil || got != "c1" {
		t.Fatalf("key after lost reply = %q, %v; want c1 (the command took effect)", got, err)
	}
}

func TestPartitionLeavesThreeOfFive(t *testing.T) {
	env, s := testNet(t, 5, 1)
	ctx := context.Background()
	heal := inject(t, env, Spec{Kind: "partition", Hosts: []string{"h1"}, Nodes: []string{"n4", "n5"}})
	defer heal()
	reach := 0
	for _, n := range s.Nodes() {
		c := client(t, env, "h1", n.Name, 200*time.Millisecond)
		if c.Ping(ctx).Err() == nil {
			reach++
		}
	}
	if reach != 3 {
		t.Fatalf("client reaches %d nodes, want 3", reach)
	}
}

func TestResetDropsConnection(t *testing.T) {
	env, _ := testNet(t, 1, 1)
	ctx := context.Background()
	c := client(t, env, "h1", "n1", 500*time.Millisecond)
	c.Ping(ctx)
	heal := inject(t, env, Spec{Kind: "reset", Hosts: []string{"h1"}, Stream: "upstream"})
	err := c.Ping(ctx).Err()
	if err == nil || isTimeout(err) {
		t.Errorf("PING on a reset link: %v, want a connection error", err)
	}
	heal()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Errorf("after heal: %v", err)
	}
}

func TestMinorityMajorityPick(t *testing.T) {
	env, _ := testNet(t, 5, 1)
	for _, tc := range []struct {
		pick string
		want int
	}{{"minority", 2}, {"majority", 3}} {
		got := Spec{Pick: tc.pick}.resolve(env).nodes
		if len(got) != tc.want {
			t.Errorf("pick %s: %v, want %d nodes", tc.pick, got, tc.want)
		}
	}
}

func TestBuildRejects(t *testing.T) {
	for _, s := range []Spec{
		{Kind: "nope"},
		{Kind: "latency"},
		{Kind: "latency", Latency: 1500 * time.Microsecond},
		{Kind: "partition"},
		{Kind: "partition", Hosts: []string{"h1"}, Direction: "sideways"},
		{Kind: "pause"},
		{Kind: "bandwidth"},
		{Kind: "latency", Latency: time.Millisecond, At: -time.Second},
	} {
		if _, err := Build(s); err == nil {
			t.Errorf("Build(%+v) accepted", s)
		}
	}
}

// TestToxicOnFlowingConnection: a connection already carrying traffic in
// direct mode gets a toxic on its next command, goes back to direct speed
// when the toxic goes, and is still cut by a partition or a reset.
func TestToxicOnFlowingConnection(t *testing.T) {
	for _, tc := range []struct {
		kind string
		spec Spec
		// check runs the next command under the fault.
		check func(t *testing.T, err error, took time.Duration)
	}{
		{"latency", Spec{Kind: "latency", Latency: 60 * time.Millisecond, Hosts: []string{"h1"}}, func(t *testing.T, err error, took time.Duration) {
			if err != nil || took < 120*time.Millisecond {
				t.Errorf("INCR under 60 ms each way: %v after %v, want ≥ 120ms", err, took)
			}
		}},
		{"partition", Spec{Kind: "partition", Hosts: []string{"h1"}}, func(t *testing.T, err error, took time.Duration) {
			if !isTimeout(err) {
				t.Errorf("INCR across a partition: %v, want a timeout", err)
			}
		}},
		{"reset", Spec{Kind: "reset", Hosts: []string{"h1"}, Stream: "upstream"}, func(t *testing.T, err error, took time.Duration) {
			if err == nil || isTimeout(err) {
				t.Errorf("INCR on a reset link: %v, want a connection error", err)
			}
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			env, _ := testNet(t, 1, 1)
			ctx := context.Background()
			c := redis.NewClient(&redis.Options{Addr: env.Net.Link("h1", "n1").Addr, MaxRetries: -1, PoolSize: 1,
				ReadTimeout: 400 * time.Millisecond, WriteTimeout: 400 * time.Millisecond})
			t.Cleanup(func() { c.Close() })
			for i := 0; i < 200; i++ { // flowing, in direct mode
				if err := c.Incr(ctx, "n").Err(); err != nil {
					t.Fatal(err)
				}
			}
			heal := inject(t, env, tc.spec)
			start := time.Now()
			err := c.Incr(ctx, "n").Err()
			tc.check(t, err, time.Since(start))
			if err := heal(); err != nil {
				t.Fatal(err)
			}
			c.Ping(ctx) // a connection the fault cut is replaced here
			start = time.Now()
			for i := 0; i < 20; i++ {
				if err := c.Incr(ctx, "n").Err(); err != nil {
					t.Fatalf("after heal: %v", err)
				}
			}
			if d := time.Since(start); d > 200*time.Millisecond {
				t.Errorf("20 INCRs after heal took %v", d)
			}
		})
	}
}

// TestSwitchKeepsBytes: toxics come and go on a link while a pipelined
// stream of INCRs flows on one raw connection; every reply arrives, in
// order, with nothing lost, duplicated or left over, and with no toxic left
// the connection is back on the direct pipes.
func TestSwitchKeepsBytes(t *testing.T) {
	env, _ := testNet(t, 1, 1)
	l := env.Net.Link("h1", "n1")
	// Connected before the first toxic: a connection accepted under a
	// toxic stays on toxiproxy's chain for its life, as toxiproxy starts it.
	c, err := net.Dial("tcp", l.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := bufio.NewReader(c)
	c.Write([]byte("INCR n\r\n")) // a round trip: the link accepted it
	if line, err := r.ReadString('\n'); line != ":1\r\n" {
		t.Fatalf("first INCR: %q, %v", line, err)
	}
	stop := make(chan struct{})
	flipped := make(chan int)
	go func() {
		n := 0
		defer func() { flipped <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			st := []string{"upstream", "downstream"}[n%2]
			name, err := l.AddToxic(Toxic{Type: "latency", Stream: st, Attributes: map[string]any{"latency": 1}})
			if err != nil {
				t.Error(err)
				return
			}
			time.Sleep(2 * time.Millisecond)
			if err := l.RemoveToxic(name); err != nil {
				t.Error(err)
				return
			}
			n++
		}
	}()
	want := 1
	for round := 0; round < 100; round++ {
		if _, err := c.Write(bytes.Repeat([]byte("INCR n\r\n"), 50)); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 50; i++ {
			want++
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("reply %d: %v", want, err)
			}
			if line != fmt.Sprintf(":%d\r\n", want) {
				t.Fatalf("reply %d = %q: a byte was lost, duplicated or reordered at a switch", want, line)
			}
		}
	}
	close(stop)
	if n := <-flipped; n < 5 {
		t.Errorf("only %d toxic add/remove cycles during the stream", n)
	}
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if b, err := r.ReadByte(); !isTimeout(err) {
		t.Errorf("a byte %q (%v) after the last reply", b, err)
	}
	// With no toxic left, both directions are back on the direct pipes.
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pipes) != 2 {
		t.Errorf("%d direct pipes, want 2 (one connection, two directions)", len(l.pipes))
	}
	for p := range l.pipes {
		if p.handed.Load() {
			t.Errorf("the %v pipe is still on a chain with no toxic", p.dir)
		}
	}
}
