package locktest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/locktest"
	"github.com/lockstorm/lockstorm/reports"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// tokenLock is a user's lock written the way a user writes one: SET NX PX
// with a token, a retry loop, and a release that is compare-and-delete, or a
// plain DEL when careless is set. It is not registered anywhere.
type tokenLock struct {
	env      lockimpl.Env
	o        lockimpl.Options
	careless bool
}

var compareAndDelete = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

func (l *tokenLock) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	tok := fmt.Sprintf("%d-%x", l.env.Client, l.env.Rand.Uint64())
	deadline := l.env.Clock.Mono() + l.o.WaitTimeout
	for {
		ok, err := l.env.Nodes[0].SetNX(ctx, key, tok, l.o.TTL).Result()
		if err != nil {
			return nil, err // no reply: the SET may have landed, outcome unknown
		}
		if ok {
			return &lockimpl.Lease{Key: key, Token: tok, Acquired: l.env.Clock.Now()}, nil
		}
		if l.env.Clock.Mono() > deadline {
			return nil, lockimpl.ErrNotAcquired
		}
		if err := l.env.Sleep(ctx, l.o.RetryDelay); err != nil {
			return nil, err
		}
	}
}

func (l *tokenLock) Release(ctx context.Context, lease *lockimpl.Lease) error {
	var n int64
	var err error
	if l.careless {
		n, err = l.env.Nodes[0].Del(ctx, lease.Key).Result()
	} else {
		n, err = compareAndDelete.Run(ctx, l.env.Nodes[0], []string{lease.Key}, lease.Token).Int64()
	}
	if err != nil {
		return err
	}
	if n == 0 {
		return lockimpl.ErrNotHeld
	}
	return nil
}

var tokenClaims = lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease}

func tokenInfo(name string, claims lockimpl.Claims, careless bool) lockimpl.Info {
	return lockimpl.Info{Name: name, Claims: claims, New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
		return &tokenLock{env: env, o: o, careless: careless}, nil
	}}
}

func verdicts(rep *locktest.Report) map[string]*scenarios.Outcome {
	out := map[string]*scenarios.Outcome{}
	for _, o := range rep.Outcomes {
		out[o.Scenario] = o
	}
	return out
}

// TestBatteryJudgesAUserLock: an unregistered lock gets its expectations
// from its claims (pause-past-ttl: unsafe, because it expires and has no
// fencing; foreign-unlock-random: safe, because its release checks the owner); the
// same lock declaring nothing is only reported; and a lock whose release
// does not do what it claims (a plain DEL) fails foreign-unlock-random, with
// its run folder kept. In pause-past-ttl its late plain DEL frees the next
// holder's key when it lands inside one of that holder's short holds (the
// schedule does not force it): then that run fails too, its overlap
// expected but the release false success forbidden by its claims.
func TestBatteryJudgesAUserLock(t *testing.T) {
	cluster.StartForTest(t, 1)
	t.Parallel()
	b := locktest.Battery{Scenarios: []string{"pause-past-ttl", "foreign-unlock-random"}, Backend: cluster.RedisServer, Out: t.TempDir()}
	for _, tc := range []struct {
		name     string
		claims   lockimpl.Claims
		careless bool
		want     map[string][3]string // scenario → verdict, expected, source
		failures int
	}{
		{"claims", tokenClaims, false, map[string][3]string{
			"pause-past-ttl":        {checker.Unsafe, checker.Unsafe, spec.FromClaims},
			"foreign-unlock-random": {checker.Safe, checker.Safe, spec.FromClaims}}, 0},
		{"no-claims", lockimpl.Claims{}, false, map[string][3]string{
			"pause-past-ttl":        {checker.Unsafe, "", ""},
			"foreign-unlock-random": {checker.Safe, "", ""}}, 0},
		{"false-claims", tokenClaims, true, map[string][3]string{
			"pause-past-ttl":        {checker.Unsafe, checker.Unsafe, spec.FromClaims},
			"foreign-unlock-random": {checker.Unsafe, checker.Safe, spec.FromClaims}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep, err := locktest.Check(t.Context(), tokenInfo("token-"+tc.name, tc.claims, tc.careless), b)
			if err != nil {
				t.Fatal(err)
			}
			got := verdicts(rep)
			for scen, w := range tc.want {
				o := got[scen]
				if o == nil {
					t.Fatalf("%s did not run", scen)
				}
				if o.Result.Verdict != w[0] || o.Expected != w[1] || o.ExpectedSource != w[2] {
					t.Errorf("%s: verdict %s expected %q from %q, want %s %q %q (%s)", scen, o.Result.Verdict, o.Expected, o.ExpectedSource, w[0], w[1], w[2], o.Result.Reason)
				}
				if o.Expected != "" && o.ExpectedReason == "" {
					t.Errorf("%s: expectation without a reason", scen)
				}
			}
			fails := rep.Failures()
			want := tc.failures
			if p := got["pause-past-ttl"]; p != nil && p.Result.Finding(history.KindReleaseFalseSuccess) != nil {
				want++
				if u := p.Result.Unpermitted(); len(u) != 1 || u[0].Kind != history.KindReleaseFalseSuccess {
					t.Errorf("pause-past-ttl: forbidden %+v, want the release false success alone", u)
				}
			}
			if len(fails) != want || len(rep.NotPermitted()) != want {
				t.Errorf("%d failures, %d not permitted, want %d", len(fails), len(rep.NotPermitted()), want)
			}
			for _, f := range fails {
				dir := rep.RunDirs[f.Scenario]
				if _, err := os.Stat(filepath.Join(dir, "history.jsonl")); err != nil {
					t.Errorf("%s: no run folder kept for the failure (%q): %v", f.Scenario, dir, err)
				}
			}
		})
	}
}

// TestBaselineGates: a baseline recorded from one battery makes the same
// verdicts expected (source baseline) and a changed verdict a failure.
func TestBaselineGates(t *testing.T) {
	cluster.StartForTest(t, 1)
	t.Parallel()
	b := locktest.Battery{Scenarios: []string{"foreign-unlock-random"}, Backend: cluster.RedisServer, Keep: "none"}
	rep, err := locktest.Check(t.Context(), tokenInfo("mine", lockimpl.Claims{}, false), b)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "baseline.json")
	if err := rep.Baseline().WriteFile(path); err != nil {
		t.Fatal(err)
	}
	b.Baseline, err = spec.ReadBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	// The same lock, now careless: its verdict changes from the baseline's.
	rep2, err := locktest.Check(t.Context(), tokenInfo("mine", lockimpl.Claims{}, true), b)
	if err != nil {
		t.Fatal(err)
	}
	o := rep2.Outcomes[0]
	if o.ExpectedSource != spec.FromBaseline || o.Expected != checker.Safe || o.Result.Verdict != checker.Unsafe || len(rep2.Failures()) != 1 {
		t.Errorf("baseline run: verdict %s expected %q from %q, %d failures", o.Result.Verdict, o.Expected, o.ExpectedSource, len(rep2.Failures()))
	}
}

// TestReportJSONRows: WriteJSON writes one JSON object per run, a line
// each, with the run's verdict and expectation as its outcome has them and
// the folder kept for it, as `lockstorm run --format json` prints its rows.
func TestReportJSONRows(t *testing.T) {
	cluster.StartForTest(t, 1)
	t.Parallel()
	b := locktest.Battery{Scenarios: []string{"foreign-unlock", "del-race"}, Backend: cluster.RedisServer, Keep: "all", Out: t.TempDir()}
	rep, err := locktest.Check(t.Context(), tokenInfo("token-json", tokenClaims, false), b)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rep.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(rep.Outcomes) || len(lines) != 2 {
		t.Fatalf("%d lines for %d runs, want one per run:\n%s", len(lines), len(rep.Outcomes), out.String())
	}
	for i, line := range lines {
		var row reports.Row
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("line %d is not one JSON row: %v: %s", i+1, err, line)
		}
		o := rep.Outcomes[i]
		if row.Scenario != o.Scenario || row.Impl != "token-json" || row.Seed != o.Seed || row.Verdict != o.Result.Verdict ||
			row.Expected != o.Expected || row.ExpectedSource != spec.FromClaims || row.AsExpected != o.AsExpected() {
			t.Errorf("line %d: %+v, want the outcome's %s × %s seed %d: %s expected %s (%s)", i+1, row, o.Scenario, o.Impl, o.Seed,
				o.Result.Verdict, o.Expected, o.ExpectedSource)
		}
		if row.RunDir == "" || row.RunDir != rep.RunDirs[o.Scenario] {
			t.Errorf("line %d: run_dir %q, want the kept folder %q", i+1, row.RunDir, rep.RunDirs[o.Scenario])
		} else if _, err := os.Stat(filepath.Join(row.RunDir, "history.jsonl")); err != nil {
			t.Errorf("line %d: %v", i+1, err)
		}
	}
}

func TestCheckRefusesBadInput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		info lockimpl.Info
		b    locktest.Battery
	}{
		{"no New", lockimpl.Info{Name: "x"}, locktest.Battery{}},
		{"half-declared claims", lockimpl.Info{Name: "x", New: tokenInfo("x", tokenClaims, false).New, Claims: lockimpl.Claims{Fencing: true}}, locktest.Battery{}},
		{"bad claim value", lockimpl.Info{Name: "x", New: tokenInfo("x", tokenClaims, false).New, Claims: lockimpl.Claims{Topology: "ring", Expiry: "server", Release: "owner-checked"}}, locktest.Battery{}},
		{"unknown scenario", tokenInfo("x", tokenClaims, false), locktest.Battery{Scenarios: []string{"no-such-scenario"}}},
		{"bad keep", tokenInfo("x", tokenClaims, false), locktest.Battery{Keep: "some"}},
	} {
		if _, err := locktest.Check(ctx, tc.info, tc.b); err == nil {
			t.Errorf("%s: no error", tc.name)
		} else if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: ran instead of refusing: %v", tc.name, err)
		}
	}
}

// TestClientProcessSkipsTopologies: a lock served by a client process is
// handed node addresses, so the Sentinel and Cluster scenarios are skipped
// for it with the reason (nothing starts: the program here does not exist),
// where they made Check fail before.
func TestClientProcessSkipsTopologies(t *testing.T) {
	lock := lockimpl.Info{Name: "proc-lock", Program: []string{"/nonexistent/lock-client"},
		Claims: lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease},
		New: func(lockimpl.Env, lockimpl.Options) (lockimpl.Locker, error) {
			return nil, errors.New("a skipped scenario must not start the lock")
		}}
	rep, err := locktest.Check(context.Background(), lock, locktest.Battery{Scenarios: []string{"cluster-failover", "sentinel-kill"}, Keep: "none"})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if len(rep.Outcomes) != 0 {
		t.Errorf("%d runs, want none", len(rep.Outcomes))
	}
	for _, n := range []string{"cluster-failover", "sentinel-kill"} {
		if why := rep.Skipped[n]; !strings.Contains(why, "client process") {
			t.Errorf("Skipped[%s] = %q, want the client-process reason", n, why)
		}
	}
}
