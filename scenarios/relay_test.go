package scenarios

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
)

// TestWirePointsExplored: a client program's commands pass command points
// on the wire without its cooperation: exploration of a Python client that
// announces no point of its own hits and faults cmd/n1/... points.
func TestWirePointsExplored(t *testing.T) {
	needPythonRedis(t)
	cluster.StartForTest(t, 1)
	client, err := filepath.Abs("../examples/clients/redis_py_lock.py")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := parseAllowed("wire.yaml", []byte(fmt.Sprintf(`name: wire-points
mode: random
clients: 6
keys: 1
duration: 2s
lock: {ttl: 200ms, retry_delay: 5ms, wait_timeout: 500ms}
workload: {cs_min: 0ms, cs_max: 2ms}
explore: {actions: [crash, lose-reply], rate: 0.1, per_point: 1}
impls: [py]
variants:
  py:
    exec: [/usr/bin/python3, %q]
expected:
  # redis-py's Lock: SET NX PX, compare-and-delete: crashes leave keys that
  # expire, lost replies unknown outcomes.
  py: safe
`, client)))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), spec, Config{Impl: "py", Backend: cluster.RedisServer, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if out.Points == nil || out.Points.Faulted == 0 {
		t.Fatalf("coverage %+v: want command points hit and faulted", out.Points)
	}
	set, crash := false, false
	for _, ps := range out.Points.Points {
		set = set || strings.HasPrefix(ps.Point, "cmd/n1/SET/")
	}
	for _, op := range out.History {
		crash = crash || op.F == history.FStep && strings.HasPrefix(op.Value, "explore crash at cmd/n1/")
	}
	if !set || !crash {
		t.Errorf("SET points hit %v, a crash explored at a command point %v; coverage %+v", set, crash, out.Points.Points)
	}
	if out.Result.Verdict == checker.Unsafe {
		t.Errorf("verdict %s: %s", out.Result.Verdict, out.Result.Reason)
	}
	t.Logf("%s: %s; points hit %d, faulted %d", out.Result.Verdict, out.Result.Reason, out.Points.Hit, out.Points.Faulted)
}
