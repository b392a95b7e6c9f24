package scenarios_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// prefixed is a test's lock that, as several libraries do, keeps the
// harness's key under a prefix of its own: "pfx:" + key. Its release is
// plainDel's bare DEL, so expired leases give false successes to find.
type prefixed struct{ plainDel }

func (l *prefixed) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	lease, err := l.plainDel.Acquire(ctx, "pfx:"+key)
	if lease != nil {
		lease.Key = key
	}
	return lease, err
}

func (l *prefixed) Release(ctx context.Context, lease *lockimpl.Lease) error {
	real := *lease
	real.Key = "pfx:" + lease.Key
	return l.plainDel.Release(ctx, &real)
}

// TestRedisKeyObserved: a lock that prefixes its keys is judged by the
// servers only when it declares the key it uses (Info.RedisKey): the
// observers then watch pfx:lock:0 and record its events as lock:0's, and
// the bare DEL's false successes are found. Undeclared, the run says that
// no event was seen on a key the clients acquired, instead of passing the
// releases in silence.
func TestRedisKeyObserved(t *testing.T) {
	cluster.StartForTest(t, 1)
	spec, err := spec.Parse("prefixed.yaml", []byte(`name: prefixed
clients: 3
keys: 1
duration: 1500ms
lock: {ttl: 100ms, retry_delay: 5ms, wait_timeout: 1s}
workload: {cs_min: 150ms, cs_max: 200ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		declared bool
		warned   bool
	}{{true, false}, {false, true}} {
		info := &lockimpl.Info{Name: "prefixed", New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
			return &prefixed{plainDel{shortLease{env: env, o: o}}}, nil
		}}
		if tc.declared {
			info.RedisKey = func(k string) string { return "pfx:" + k }
		}
		out, err := scenarios.Run(context.Background(), spec, scenarios.Config{Info: info, Backend: cluster.RedisServer, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		r := out.Result
		warned := strings.Contains(out.Observer, "WARNING: no key event on lock:0")
		t.Logf("declared %v: observer %q; %d server events, %d false successes", tc.declared, out.Observer, r.ServerEvents, r.FalseSuccesses)
		if warned != tc.warned {
			t.Errorf("declared %v: warning %v, want %v (observer %q)", tc.declared, warned, tc.warned, out.Observer)
		}
		if tc.declared && (r.ServerEvents == 0 || r.FalseSuccesses == 0) {
			t.Errorf("declared: %d server events, %d false successes: the prefixed key was not watched", r.ServerEvents, r.FalseSuccesses)
		}
		if !tc.declared && r.ServerEvents != 0 {
			t.Errorf("undeclared: %d server events on a key the lock never used", r.ServerEvents)
		}
	}
}
