package scenarios_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

var casPexpire = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) end return 0`)

// checkedExtend extends with a compare-and-pexpire: ok only on its own key.
type checkedExtend struct{ shortLease }

func (l *checkedExtend) Extend(ctx context.Context, lease *lockimpl.Lease, ttl time.Duration) error {
	n, err := casPexpire.Run(ctx, l.env.Nodes[0], []string{lease.Key}, lease.Token, ttl.Milliseconds()).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return lockimpl.ErrNotHeld
	}
	return nil
}

// bareExtend is a test's lock whose extend reports ok without checking
// ownership: a bare PEXPIRE, whatever the key holds and whatever it replies
// (redsync before v4.0.4 reported Extend ok on an expired lock).
type bareExtend struct{ shortLease }

func (l *bareExtend) Extend(ctx context.Context, lease *lockimpl.Lease, ttl time.Duration) error {
	return l.env.Nodes[0].PExpire(ctx, lease.Key, ttl).Err()
}

// TestExtendFalseSuccess: holders extend every 120 ms a lock whose TTL is
// 100 ms, so a holder's key expires before its extend and another client
// may take it first. The bare PEXPIRE reports ok on a key that was gone or
// another's: false successes on extend, the second kind a foreign renewal.
// The compare-and-pexpire extend's late extends fail, and none is false.
func TestExtendFalseSuccess(t *testing.T) {
	cluster.StartForTest(t, 1)
	sp, err := spec.Parse("extend-false-success.yaml", []byte(`name: extend-false-success
clients: 3
keys: 1
duration: 2s
lock: {ttl: 100ms, retry_delay: 5ms, wait_timeout: 1s}
workload: {cs_min: 250ms, cs_max: 300ms, extend_every: 120ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	// In time (every 50 ms of a 300 ms TTL) the checked extend keeps the
	// lock its holder's for the whole 600-700 ms hold: safe, every extend
	// ok. Only a stall of the harness over 250 ms could lose it (a busy
	// machine stalls tens of ms: 60 ms of a 100 ms TTL once did).
	inTime, err := spec.Parse("extend-in-time.yaml", []byte(`name: extend-in-time
clients: 3
keys: 1
duration: 2500ms
lock: {ttl: 300ms, retry_delay: 5ms, wait_timeout: 2s}
workload: {cs_min: 600ms, cs_max: 700ms, extend_every: 50ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	newLock := func(bare bool) *lockimpl.Info {
		return &lockimpl.Info{Name: fmt.Sprintf("bare-extend-%v", bare), New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
			if bare {
				return &bareExtend{shortLease{env: env, o: o}}, nil
			}
			return &checkedExtend{shortLease{env: env, o: o}}, nil
		}}
	}
	for _, bare := range []bool{true, false} {
		out, err := scenarios.Run(context.Background(), sp, scenarios.Config{Info: newLock(bare), Backend: cluster.RedisServer, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		r := out.Result
		if r.ServerEvents == 0 || r.Extends == 0 {
			t.Fatalf("bare=%v: %d server events, %d extends", bare, r.ServerEvents, r.Extends)
		}
		invokes := 0
		for _, op := range out.History {
			if op.F == history.FExtend && op.Type == history.Invoke {
				invokes++
			}
		}
		if invokes != r.Extends {
			t.Errorf("bare=%v: %d extend invokes in the history, Result.Extends %d", bare, invokes, r.Extends)
		}
		if bare {
			if r.ExtendFalseSuccesses == 0 || r.Verdict != checker.Unsafe || !strings.Contains(r.Reason, "extend of lock:0") {
				t.Errorf("bare: %d extend false successes, verdict %s: %s", r.ExtendFalseSuccesses, r.Verdict, r.Reason)
			}
		} else {
			if r.ExtendFalseSuccesses != 0 || r.ForeignRenewals != 0 {
				t.Errorf("checked: %d extend false successes, %d foreign: %s", r.ExtendFalseSuccesses, r.ForeignRenewals, r.FalseSuccess)
			}
			if r.ExtendsFailed == 0 {
				t.Errorf("checked: no extend failed, though every hold outlives the TTL (%d extends, %d ok)", r.Extends, r.ExtendsOK)
			}
		}
		if !bare {
			out, err := scenarios.Run(context.Background(), inTime, scenarios.Config{Info: newLock(false), Backend: cluster.RedisServer, Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			ri := out.Result
			if ri.Verdict != checker.Safe || ri.ExtendsOK == 0 || ri.ExtendsFailed != 0 || ri.FalseSuccesses != 0 {
				t.Errorf("checked, in time: verdict %s (%s), extends %d ok %d failed %d, false successes %d",
					ri.Verdict, ri.Reason, ri.Extends, ri.ExtendsOK, ri.ExtendsFailed, ri.FalseSuccesses)
			}
			t.Logf("checked, in time: %s, extends %d (ok %d)", ri.Verdict, ri.Extends, ri.ExtendsOK)
		}
		t.Logf("bare=%v: extends %d (ok %d, failed %d, unknown %d); false successes %d (extend %d, foreign renewals %d, unjudged %d); %s | %s",
			bare, r.Extends, r.ExtendsOK, r.ExtendsFailed, r.ExtendsUnknown, r.FalseSuccesses, r.ExtendFalseSuccesses,
			r.ForeignRenewals, r.FalseSuccessUnjudged, r.FalseSuccess, r.ForeignRenewal)
	}
}

// TestWatchdogRenewalsRecorded: set-nx-px's watchdog renews every TTL/3
// while its holder works past the TTL; each renewal is in the history
// (FExtend, beside the client's own operations), judged like an extend,
// and a correct watchdog's are neither false nor foreign.
func TestWatchdogRenewalsRecorded(t *testing.T) {
	cluster.StartForTest(t, 1)
	spec, err := spec.Parse("watchdog-renewals.yaml", []byte(`name: watchdog-renewals
clients: 2
keys: 1
duration: 1500ms
lock: {ttl: 90ms, retry_delay: 5ms, wait_timeout: 1s, watchdog: true}
workload: {cs_min: 150ms, cs_max: 200ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := scenarios.Run(context.Background(), spec, scenarios.Config{Impl: "set-nx-px", Backend: cluster.RedisServer, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Result
	t.Logf("%s: renewals %d (ok %d, failed %d, unknown %d), false successes %d, unjudged %d; %s",
		r.Verdict, r.Extends, r.ExtendsOK, r.ExtendsFailed, r.ExtendsUnknown, r.FalseSuccesses, r.FalseSuccessUnjudged, r.Reason)
	if r.Extends == 0 || r.ExtendsOK == 0 || r.Malformed != 0 {
		t.Errorf("renewals %d, ok %d, malformed %d", r.Extends, r.ExtendsOK, r.Malformed)
	}
	if r.Verdict != checker.Safe || r.FalseSuccesses != 0 {
		t.Errorf("verdict %s, %d false successes: %s", r.Verdict, r.FalseSuccesses, r.Reason)
	}
}
