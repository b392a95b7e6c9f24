package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/scenarios/cluster"
)

// TestManyClients runs 256 clients (64 hosts, so 4 share each host's
// links) on real redis-server through the proxies and checks that they all
// took part and that the verdict for set-nx-px is safe.
func TestManyClients(t *testing.T) {
	cluster.StartForTest(t, 1) // a CI failure without redis-server, a skip elsewhere
	spec, err := Parse("many.yaml", []byte(`name: many
clients: 256
keys: 16
duration: 2s
lock: {ttl: 2s, retry_delay: 5ms, wait_timeout: 3s}
workload: {cs_min: 0ms, cs_max: 1ms}
network: {latency: 1ms}
impls: [set-nx-px]
expected: {set-nx-px: safe}
`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), spec, Config{Impl: "set-nx-px", Backend: cluster.RedisServer})
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Verdict != checker.Safe {
		t.Fatalf("verdict %s: %s", out.Result.Verdict, out.Result.Reason)
	}
	clients := map[int]bool{}
	for _, op := range out.History {
		if op.F == checker.FAcquire && op.Type == checker.Ok {
			clients[op.Client] = true
		}
	}
	if len(clients) < 200 {
		t.Errorf("only %d of 256 clients acquired in 2 s", len(clients))
	}
	if out.Elapsed > 15*time.Second {
		t.Errorf("a 2 s run took %v", out.Elapsed)
	}
}

// TestScheduledCasesReproduce runs the scheduled documented cases on real
// redis-server and checks each verdict against the spec's expectation:
// the failpoints must force the documented interleaving on any seed.
func TestScheduledCasesReproduce(t *testing.T) {
	cluster.StartForTest(t, 1)
	if testing.Short() {
		t.Skip("runs every scheduled case")
	}
	for _, name := range Names() {
		spec, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if spec.Mode != "scheduled" {
			continue
		}
		for _, impl := range spec.Impls {
			t.Run(name+"/"+impl, func(t *testing.T) {
				t.Parallel()
				out, err := Run(context.Background(), spec, Config{Impl: impl, Backend: cluster.RedisServer, Seed: 7})
				if err != nil {
					t.Fatal(err)
				}
				if !out.AsExpected() {
					t.Errorf("verdict %s, expected %s: %s", out.Result.Verdict, out.Expected, out.Result.Reason)
				}
			})
		}
	}
}
