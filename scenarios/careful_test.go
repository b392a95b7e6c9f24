package scenarios_test

import (
	"context"
	"fmt"
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

// shortLease is a test's lock: SET NX PX with compare-and-delete, whose
// lease promises only 2/5 of the TTL (as Redlock promises TTL minus drift
// and elapsed time), so a careful client stops well before the key expires.
type shortLease struct {
	env lockimpl.Env
	o   lockimpl.Options
}

var casDel = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

func (l *shortLease) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	deadline := time.Now().Add(l.o.WaitTimeout)
	tok := fmt.Sprintf("c%d-%d", l.env.Client, l.env.Rand.Uint64())
	for {
		at := l.env.Clock.Now()
		ok, err := l.env.Nodes[0].SetNX(ctx, key, tok, l.o.TTL).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			return &lockimpl.Lease{Key: key, Token: tok, Acquired: at, Validity: l.o.TTL * 2 / 5}, nil
		}
		if time.Now().After(deadline) {
			return nil, lockimpl.ErrNotAcquired
		}
		if err := l.env.Sleep(ctx, l.o.RetryDelay); err != nil {
			return nil, err
		}
	}
}

func (l *shortLease) Release(ctx context.Context, lease *lockimpl.Lease) error {
	n, err := casDel.Run(ctx, l.env.Nodes[0], []string{lease.Key}, lease.Token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return lockimpl.ErrNotHeld
	}
	return nil
}

// runSpec runs the spec text (file name for its errors) with info's lock on
// a real redis-server, and fails the test on a bad spec or a run's error.
func runSpec(t *testing.T, info *lockimpl.Info, file, text string, seed uint64) *scenarios.Outcome {
	t.Helper()
	sp, err := spec.Parse(file, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	out, err := scenarios.Run(context.Background(), sp, scenarios.Config{Info: info, Backend: cluster.RedisServer, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCarefulClientAbandons: critical sections longer than the TTL. Careless
// clients overrun their keys' expiry and overlap (unsafe); careful clients
// stop when their lease's validity runs out, record the abandonment, never
// write after it, and are not counted as holding afterwards (safe). A
// careful client stops 120 ms into a 300 ms TTL: a 180 ms margin, so a
// scheduler stall on a loaded machine does not overrun it by itself.
func TestCarefulClientAbandons(t *testing.T) {
	cluster.StartForTest(t, 1)
	info := lockimpl.Info{Name: "short-lease", New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
		return &shortLease{env: env, o: o}, nil
	}}
	for _, tc := range []struct {
		client  string
		verdict string
	}{
		{spec.Careful, checker.Safe},
		{spec.Careless, checker.Unsafe},
	} {
		t.Run(tc.client, func(t *testing.T) {
			out := runSpec(t, &info, "careful.yaml", `name: careful
clients: 4
keys: 1
duration: 2s
lock: {ttl: 300ms, retry_delay: 5ms, wait_timeout: 1s}
workload: {cs_min: 400ms, cs_max: 500ms, client: `+tc.client+`}
`, 3)
			if out.Client != tc.client {
				t.Errorf("outcome says client %q, want %q", out.Client, tc.client)
			}
			if out.Result.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s: %s", out.Result.Verdict, tc.verdict, out.Result.Reason)
			}
			abandons, afterAbandon := 0, 0
			gaveUp := map[int]bool{} // process → abandoned its current hold
			for _, op := range out.History {
				switch {
				case op.F == history.FAbandon:
					abandons++
					gaveUp[op.Process] = true
				case op.F == history.FAcquire && op.Type == history.Ok:
					delete(gaveUp, op.Process)
				case (op.F == history.FWrite || op.F == history.FRead) && gaveUp[op.Process]:
					afterAbandon++
				}
			}
			if tc.client == spec.Careful && (abandons == 0 || abandons < out.Result.Acquired/2) {
				t.Errorf("%d abandonments for %d acquisitions: a careful client should give up every section longer than its validity", abandons, out.Result.Acquired)
			}
			if tc.client == spec.Careless && abandons > 0 {
				t.Errorf("a careless client abandoned %d times", abandons)
			}
			if afterAbandon > 0 {
				t.Errorf("%d resource accesses after an abandonment", afterAbandon)
			}
			if out.Result.Acquired < 4 {
				t.Errorf("only %d acquisitions: the run did not exercise the lock", out.Result.Acquired)
			}
			t.Logf("%s: %s; %d abandonments, %d acquisitions", tc.client, out.Result.Reason, abandons, out.Result.Acquired)
		})
	}
}

// refusingExtend is a lock whose lease promises no validity of its own and
// whose every extend is a definite "not yours".
type refusingExtend struct{ shortLease }

func (l *refusingExtend) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	lease, err := l.shortLease.Acquire(ctx, key)
	if lease != nil {
		lease.Validity = 0
	}
	return lease, err
}

func (l *refusingExtend) Extend(context.Context, *lockimpl.Lease, time.Duration) error {
	return lockimpl.ErrNotHeld
}

// TestCarefulStopsAtExtendRefusal: a careful client whose extend was
// refused, definitely, stops: it abandons, and neither reads nor writes the
// resource again in that hold (a careless one writes on). Before the fix
// the careful client worked the rest of its hold and wrote.
func TestCarefulStopsAtExtendRefusal(t *testing.T) {
	cluster.StartForTest(t, 1)
	info := lockimpl.Info{Name: "refusing-extend", New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
		return &refusingExtend{shortLease{env: env, o: o}}, nil
	}}
	for _, tc := range []struct {
		client      string
		writesAfter bool
	}{
		{spec.Careful, false},
		{spec.Careless, true},
	} {
		t.Run(tc.client, func(t *testing.T) {
			out := runSpec(t, &info, "refused.yaml", `name: refused
clients: 2
keys: 1
duration: 1s
lock: {ttl: 2s, retry_delay: 5ms, wait_timeout: 1s}
workload: {cs_min: 150ms, cs_max: 150ms, extend_every: 50ms, client: `+tc.client+`}
`, 1)
			refused := map[int]bool{} // process → its extend was refused in this hold
			refusals, writesAfter := 0, 0
			for _, op := range out.History {
				switch {
				case op.F == history.FExtend && op.Type == history.Fail:
					refused[op.Process] = true
					refusals++
				case op.F == history.FRelease:
					delete(refused, op.Process)
				case op.F == history.FWrite && op.Type == history.Invoke && refused[op.Process]:
					writesAfter++
				}
			}
			if refusals == 0 {
				t.Fatalf("no extend refused: the run tested nothing")
			}
			if got := writesAfter > 0; got != tc.writesAfter {
				t.Errorf("%s client: %d writes after %d refused extends, want writes: %v", tc.client, writesAfter, refusals, tc.writesAfter)
			}
		})
	}
}

// lostAtOnce is a lock whose lease reports itself lost as soon as it is
// granted, as a watchdog whose first renewal was refused does.
type lostAtOnce struct{ shortLease }

func (l *lostAtOnce) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	lease, err := l.shortLease.Acquire(ctx, key)
	if lease != nil {
		lost := make(chan struct{})
		close(lost)
		lease.Lost, lease.Validity = lost, 0
	}
	return lease, err
}

// TestLostLeaseCarefulOnly: a lock that reports its lease lost stops a
// careful client's write (it abandons the hold) and not a careless one's, whose
// section runs to its end whatever the lease says. Before the fix a careless
// client skipped its write too, so whether a watchdog's refused renewal
// answered before a hold ended decided whether a paused holder's stale
// write happened (pause-past-ttl × set-nx-px-wd: no stale write in 3 of 120
// runs on a loaded machine).
func TestLostLeaseCarefulOnly(t *testing.T) {
	cluster.StartForTest(t, 1)
	info := lockimpl.Info{Name: "lost-at-once", New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
		return &lostAtOnce{shortLease{env: env, o: o}}, nil
	}}
	for _, tc := range []struct {
		client string
		writes bool
	}{
		{spec.Careful, false},
		{spec.Careless, true},
	} {
		t.Run(tc.client, func(t *testing.T) {
			out := runSpec(t, &info, "lost.yaml", `name: lost
clients: 2
keys: 1
duration: 500ms
lock: {ttl: 2s, retry_delay: 5ms, wait_timeout: 1s}
workload: {cs_min: 5ms, cs_max: 5ms, client: `+tc.client+`}
`, 1)
			writes, stops := 0, 0 // stops: lost or abandon records
			for _, op := range out.History {
				switch {
				case op.F == history.FWrite && op.Type == history.Invoke:
					writes++
				case op.F == history.FLost || op.F == history.FAbandon:
					stops++
				}
			}
			if out.Result.Acquired < 4 {
				t.Fatalf("only %d acquisitions: the run tested nothing", out.Result.Acquired)
			}
			if got := writes > 0; got != tc.writes {
				t.Errorf("%s client: %d writes, %d lost or abandon records in %d holds; want writes: %v", tc.client, writes, stops, out.Result.Acquired, tc.writes)
			}
			if tc.client == spec.Careful && stops == 0 {
				t.Errorf("careful client: no lost or abandon record in %d holds", out.Result.Acquired)
			}
			if tc.client == spec.Careless && stops > 0 {
				t.Errorf("careless client: %d lost or abandon records: it never looks", stops)
			}
		})
	}
}
