package scenarios_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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

// twoStep is a user's lock that lockstorm has never heard of: no failpoints,
// not registered, SET NX then PEXPIRE as two commands (seed 001 §六 Q1's
// mistake, written afresh), released with a plain DEL.
type twoStep struct {
	env lockimpl.Env
	o   lockimpl.Options
}

func (l *twoStep) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	rdb := l.env.Nodes[0]
	deadline := time.Now().Add(l.o.WaitTimeout)
	tok := fmt.Sprintf("c%d-%d", l.env.Client, l.env.Rand.Uint64())
	for {
		ok, err := rdb.SetNX(ctx, key, tok, 0).Result()
		if err != nil {
			return nil, err // unknown: the SET may have landed
		}
		if ok {
			if err := rdb.PExpire(ctx, key, l.o.TTL).Err(); err != nil {
				return nil, err
			}
			return &lockimpl.Lease{Key: key, Token: tok, Acquired: l.env.Clock.Now()}, nil
		}
		if time.Now().After(deadline) {
			return nil, lockimpl.ErrNotAcquired
		}
		if err := l.env.Sleep(ctx, l.o.RetryDelay); err != nil {
			return nil, err
		}
	}
}

func (l *twoStep) Release(ctx context.Context, lease *lockimpl.Lease) error {
	return l.env.Nodes[0].Del(ctx, lease.Key).Err()
}

var twoStepInfo = lockimpl.Info{
	Name:    "two-step",
	Summary: "a test's lock: SET NX, then PEXPIRE",
	New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
		return &twoStep{env: env, o: o}, nil
	},
}

// exploreSpec names none of any lock's points: exploration must find them.
const exploreSpec = `name: explore-crash
mode: random
clients: 8
keys: 1
duration: 2500ms
deadlock_bound: 800ms
lock: {ttl: 200ms, retry_delay: 5ms, wait_timeout: 400ms}
workload: {cs_min: 0ms, cs_max: 2ms}
explore: {actions: [crash], rate: 0.05}
`

// TestExploreFindsCrashBetweenCommands: a random crash mode whose spec names
// no point finds the two-command lock deadlocked, because exploration draws
// the points between its SET and its PEXPIRE; the same exploration on a lock
// that sets key and TTL in one command (set-nx-px) finds no deadlock, so the
// verdict comes from the lock, not from the exploration.
func TestExploreFindsCrashBetweenCommands(t *testing.T) {
	cluster.StartForTest(t, 1)
	spec, err := spec.Parse("explore.yaml", []byte(exploreSpec))
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range []uint64{1, 2} {
		out, err := scenarios.Run(context.Background(), spec, scenarios.Config{Info: &twoStepInfo, Backend: cluster.RedisServer, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if out.Result.Verdict != checker.Deadlock {
			t.Errorf("seed %d: two-step verdict %s, want deadlock: %s", seed, out.Result.Verdict, out.Result.Reason)
		}
		between := false
		for _, op := range out.History {
			if op.F == history.FStep && (strings.HasSuffix(op.Value, "crash at cmd/n1/SET/after") || strings.HasSuffix(op.Value, "crash at cmd/n1/PEXPIRE/before")) {
				between = true
			}
		}
		if !between {
			t.Errorf("seed %d: no crash was explored between SET and PEXPIRE", seed)
		}
		cov := out.Points
		// The crash may land on the very first SET's after point, so the
		// PEXPIRE points need not be reached at all: coverage must show at
		// least the SET's two points and the fault injected there.
		if cov == nil || cov.Hit < 2 || cov.Faulted < 1 {
			t.Fatalf("seed %d: coverage %+v: want at least SET's before/after hit and a fault", seed, cov)
		}
		t.Logf("seed %d: %s; points hit %d, faulted %d: %+v", seed, out.Result.Reason, cov.Hit, cov.Faulted, cov.Points)

		ctl, err := scenarios.Run(context.Background(), spec, scenarios.Config{Impl: "set-nx-px", Backend: cluster.RedisServer, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if ctl.Result.Verdict == checker.Deadlock {
			t.Errorf("seed %d: set-nx-px deadlocked under the same exploration: %s", seed, ctl.Result.Reason)
		}
	}
}

// TestCommandPoints checks the command points on a real redis-server: the
// before point runs before the command reaches the server, the after point
// once it took effect; a crash at the after point leaves the command landed
// and the client dead; a lost reply leaves it landed and the client with a
// timeout.
func TestCommandPoints(t *testing.T) {
	srv := cluster.StartForTest(t, 1)
	addr := srv.Nodes()[0].Addr
	spy := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
	defer spy.Close()
	ctx := context.Background()

	exists := func() bool {
		n, err := spy.Exists(ctx, "k").Result()
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	var mu sync.Mutex
	var seen []string
	look := func(what string) func(context.Context) error {
		return func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprintf("%s:%v", what, exists()))
			return nil
		}
	}
	tests := []struct {
		name     string
		point    string
		action   lockimpl.Action
		wantErr  error
		wantSeen string
		landed   bool
		dead     bool
		second   error // the error of a second SET in the same cycle
	}{
		{"before", "cmd/n1/SET/before", lockimpl.Action{Do: look("before")}, nil, "before:false", true, false, nil},
		{"after", "cmd/n1/SET/after", lockimpl.Action{Do: look("after")}, nil, "after:true", true, false, nil},
		{"pattern", "cmd/*/SET/before", lockimpl.Action{Do: look("pattern")}, nil, "pattern:false", true, false, nil},
		{"crash before", "cmd/n1/SET/before", lockimpl.Action{Crash: true}, lockimpl.ErrCrashed, "", false, true, nil},
		{"crash after", "cmd/n1/SET/after", lockimpl.Action{Crash: true}, lockimpl.ErrCrashed, "", true, true, nil},
		{"lost reply", "cmd/n1/SET/after", lockimpl.Action{LoseReply: true}, lockimpl.ErrLostReply, "", true, false, nil},
		{"second set only", "cmd/n1/SET/after", lockimpl.Action{Nth: 2, LoseReply: true}, nil, "", true, false, lockimpl.ErrLostReply},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := spy.Del(ctx, "k").Err(); err != nil {
				t.Fatal(err)
			}
			seen = nil
			fp := lockimpl.NewFailpoints(lockimpl.NewHub(), 0)
			fp.Attach(tc.point, tc.action)
			rdb, dead := scenarios.HookedClientForTest(addr, "n1", fp)
			defer rdb.Close()
			err := rdb.Set(ctx, "k", "v", 0).Err()
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("SET error %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == lockimpl.ErrLostReply {
				var te interface{ Timeout() bool }
				if !errors.As(err, &te) || !te.Timeout() {
					t.Errorf("a lost reply should look like a timeout, got %T %v", err, err)
				}
			}
			if got := exists(); got != tc.landed {
				t.Errorf("key set: %v, want %v", got, tc.landed)
			}
			if tc.wantSeen != "" && (len(seen) != 1 || seen[0] != tc.wantSeen) {
				t.Errorf("seen %v, want [%s]", seen, tc.wantSeen)
			}
			if dead() != tc.dead {
				t.Errorf("client dead: %v, want %v", dead(), tc.dead)
			}
			if tc.second != nil {
				if err := rdb.Set(ctx, "k", "v", 0).Err(); !errors.Is(err, tc.second) {
					t.Errorf("second SET: error %v, want %v", err, tc.second)
				}
				fp.NewCycle()
				if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
					t.Errorf("first SET of a new cycle: %v", err)
				}
				if err := rdb.Set(ctx, "k", "v", 0).Err(); !errors.Is(err, tc.second) {
					t.Errorf("second SET of a new cycle: error %v, want %v", err, tc.second)
				}
			}
			if tc.dead {
				spy.Del(ctx, "k")
				if err := rdb.Set(ctx, "k", "again", 0).Err(); !errors.Is(err, lockimpl.ErrCrashed) {
					t.Errorf("a crashed client sent another command: err %v", err)
				}
				if exists() {
					t.Error("a crashed client's command reached the server")
				}
			}
		})
	}
}

// TestCoverageCombinations: an exploring run on sim reports its
// combinations (point × fault × client state × contender): a release
// exploration reaches its points in the releasing state, with and without
// a contender; a seed reports the same combinations twice, with or without
// a prior (the combinations earlier runs covered, which its explorer
// steers away from); and the coverage carried across seeds grows.
func TestCoverageCombinations(t *testing.T) {
	sp, err := spec.Load("explore-late-release")
	if err != nil {
		t.Fatal(err)
	}
	run := func(seed uint64, prior []string) *scenarios.Outcome {
		t.Helper()
		o, err := scenarios.Run(context.Background(), sp, scenarios.Config{Impl: "set-nx-px", Seed: seed, Backend: cluster.Sim, Prior: prior})
		if err != nil {
			t.Fatal(err)
		}
		if o.Points == nil || o.Points.Combinations == 0 || o.Points.Covered == 0 {
			t.Fatalf("seed %d: no combinations: %+v", seed, o.Points)
		}
		return o
	}
	a, b := run(1, nil), run(1, nil)
	if fmt.Sprint(a.Points.Combos) != fmt.Sprint(b.Points.Combos) {
		t.Errorf("seed 1 twice, two coverages:\n%v\n%v", a.Points.Combos, b.Points.Combos)
	}
	states := map[string]bool{}
	for _, c := range a.Points.Combos {
		states[c.State] = true
	}
	if !states[scenarios.StateReleasing] {
		t.Errorf("no releasing state among %v", a.Points.Combos)
	}
	set := scenarios.NewCoverageSet()
	set.Add("set-nx-px", a.Points.Combos)
	before, _ := set.Counts()
	c, d := run(2, set.Covered()), run(2, set.Covered())
	if fmt.Sprint(c.Points.Combos) != fmt.Sprint(d.Points.Combos) {
		t.Errorf("seed 2 with a prior twice, two coverages")
	}
	set.Add("set-nx-px", c.Points.Combos)
	after, total := set.Counts()
	t.Logf("coverage after seed 1: %d; after seed 2 steered: %d of %d", before, after, total)
}

// TestHuntBudget: a hunt stops at its budget, the runs under way cut
// short and counted for nothing, and carries the combinations covered
// from seed to seed into each round's jobs.
func TestHuntBudget(t *testing.T) {
	sp, err := spec.Load("explore-late-release")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		budget   time.Duration
		minSeeds int
	}{
		{"no budget", 0, 0},
		{"a few seeds", 1500 * time.Millisecond, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var priors []int
			h := scenarios.Hunt{Budget: tc.budget, Round: func(seed uint64, prior []string) []scenarios.Job {
				priors = append(priors, len(prior))
				return []scenarios.Job{{Spec: sp, Config: scenarios.Config{Impl: "set-nx-px", Seed: seed, Backend: cluster.Sim, Prior: prior}}}
			}}
			res, err := h.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if res.Found != nil || res.Seeds < tc.minSeeds || res.Runs > res.Seeds {
				t.Fatalf("found %v, %d seeds, %d runs; want nothing found on at least %d seeds", res.Found != nil, res.Seeds, res.Runs, tc.minSeeds)
			}
			if tc.minSeeds > 1 && (priors[0] != 0 || priors[1] == 0) {
				t.Errorf("priors carried %v: want none into the first round, some into the second", priors)
			}
		})
	}
}
