package scenarios_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// plainDel is a test's lock whose release reports ok without checking
// ownership: SET NX PX, then a bare DEL whatever the key holds (seed 003's
// foreign unlock, written afresh).
type plainDel struct{ shortLease }

func (l *plainDel) Release(ctx context.Context, lease *lockimpl.Lease) error {
	return l.env.Nodes[0].Del(ctx, lease.Key).Err()
}

// TestFalseSuccessDetected: critical sections outlive the TTL, so a holder's
// key expires and another client takes it; the bare DEL then reports ok on
// a key that was no longer the releaser's, which only the servers' own
// events can tell. The same run with a compare-and-delete release has no
// false success (its late releases fail, as they should).
func TestFalseSuccessDetected(t *testing.T) {
	cluster.StartForTest(t, 1)
	spec, err := spec.Parse("false-success.yaml", []byte(`name: false-success
clients: 3
keys: 1
duration: 1500ms
lock: {ttl: 100ms, retry_delay: 5ms, wait_timeout: 1s}
workload: {cs_min: 150ms, cs_max: 200ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	newLock := func(del bool) *lockimpl.Info {
		return &lockimpl.Info{Name: fmt.Sprintf("del-%v", del), New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
			if del {
				return &plainDel{shortLease{env: env, o: o}}, nil
			}
			return &shortLease{env: env, o: o}, nil
		}}
	}
	for _, tc := range []struct {
		del  bool
		want bool
	}{{true, true}, {false, false}} {
		out, err := scenarios.Run(context.Background(), spec, scenarios.Config{Info: newLock(tc.del), Backend: cluster.RedisServer, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		r := out.Result
		if !strings.HasPrefix(out.Observer, "keyspace events") || r.ServerEvents == 0 {
			t.Fatalf("del=%v: observer %q, %d server events", tc.del, out.Observer, r.ServerEvents)
		}
		sets := 0
		for _, op := range out.History {
			if op.F == history.FServer && op.Value == "set" && op.Owner != "" {
				sets++
			}
		}
		if sets == 0 {
			t.Errorf("del=%v: no set event with its owner read", tc.del)
		}
		if got := r.FalseSuccesses > 0; got != tc.want {
			t.Errorf("del=%v: %d false successes (%s), want some: %v", tc.del, r.FalseSuccesses, r.FalseSuccess, tc.want)
		}
		if tc.want && (r.Verdict != checker.Unsafe || !strings.Contains(r.Reason, "false success: c")) {
			t.Errorf("del=%v: verdict %s: %s", tc.del, r.Verdict, r.Reason)
		}
		t.Logf("del=%v: %d server events, %d false successes; %s", tc.del, r.ServerEvents, r.FalseSuccesses, r.FalseSuccess)
	}
}

// TestObserverOffOnEmbedded: miniredis has no keyspace notifications; the
// run goes on without the observer and says so.
func TestObserverOffOnEmbedded(t *testing.T) {
	spec, err := spec.Parse("embedded.yaml", []byte("name: e\nclients: 2\nduration: 300ms\nlock: {ttl: 1s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := scenarios.Run(ctx, spec, scenarios.Config{Impl: "set-nx-px", Backend: cluster.Embedded})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.Observer, "off: ") || out.Result.ServerEvents != 0 {
		t.Errorf("observer %q with %d events on miniredis", out.Observer, out.Result.ServerEvents)
	}
	if out.Result.Verdict != checker.Safe {
		t.Errorf("verdict %s: %s", out.Result.Verdict, out.Result.Reason)
	}
}
