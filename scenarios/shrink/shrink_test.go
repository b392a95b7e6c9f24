package shrink_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/shrink"
)

// TestShrinkShippedFailures: a scheduled bug (del-race × setnx-del: the
// DEL race) and a random one (pause-past-ttl-random × set-nx-px: a pause
// past the TTL) shrink to at most their clients, 1 key and 1 fault; the
// minimal spec, written as a file and loaded back as `lockstorm run
// --scenario` loads it, fails on every one of K replays. By default only
// the random one runs, with a short budget (the search keeps what it
// accepted by then; cmd/lockstorm's TestShrinkCommand shrinks the DEL race
// from its run folder); LOCKSTORM_TEST_SEEDS=K runs both, each the whole
// search on K seeds a candidate.
func TestShrinkShippedFailures(t *testing.T) {
	cluster.RequireRedisServer(t)
	k, full := 3, false
	if n, err := strconv.Atoi(os.Getenv("LOCKSTORM_TEST_SEEDS")); err == nil && n > 0 {
		k, full = n, true
	}
	for _, tc := range []struct {
		scenario, impl string
		budget         time.Duration
		// clients is the fewest the bug needs. The DEL race needs three:
		// the holder that crashes (a crashed client never comes back) and
		// the two waiters that both take over its expired stamp. A pause
		// past the TTL needs two: the paused holder and the next.
		clients int
		// always: run by default, not only with LOCKSTORM_TEST_SEEDS.
		always bool
	}{
		{"del-race", "setnx-del", 8 * time.Second, 3, false},
		{"pause-past-ttl-random", "set-nx-px", 12 * time.Second, 2, true},
	} {
		t.Run(tc.scenario+"/"+tc.impl, func(t *testing.T) {
			if !tc.always && !full {
				t.Skip("LOCKSTORM_TEST_SEEDS=K runs it (cmd/lockstorm's TestShrinkCommand shrinks it by default)")
			}
			spec, err := scenarios.Load(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			budget := tc.budget
			if full {
				budget = 5 * time.Minute
			}
			cfg := scenarios.Config{Impl: tc.impl, Backend: cluster.RedisServer}
			res, err := shrink.Shrink(context.Background(), spec, cfg, shrink.Options{Seeds: k, Parallel: min(k, 3), Budget: budget,
				Progress: func(s shrink.Step) { t.Log(s) }})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s\n%s", res.BeforeAfter(), res.Rate())
			if res.Verdict != checker.Unsafe {
				t.Fatalf("shrank the %s verdict class, want unsafe", res.Verdict)
			}
			if a := res.After; a.Clients > tc.clients || a.Keys != 1 || a.Faults > 1 {
				t.Errorf("minimal spec has %d clients, %d keys, %d faults: want at most %d, 1, 1", a.Clients, a.Keys, a.Faults, tc.clients)
			}
			if res.Confirmed < k {
				t.Errorf("the minimal spec failed on %d of %d fresh seeds", res.Confirmed, k)
			}
			replayFile(t, res, tc.scenario, tc.impl, k)
		})
	}
}

// replayFile writes res's minimal spec as a file, loads it as `lockstorm
// run --scenario` does, and runs it on k seeds nobody judged it on: every
// run must give the verdict class again.
func replayFile(t *testing.T, res *shrink.Result, scenario, impl string, k int) {
	t.Helper()
	b, err := res.File("test")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "min.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "# Minimal witness written by lockstorm shrink, shrunk from "+scenario+" × "+impl) {
		t.Errorf("header:\n%s", b)
	}
	minimal, err := scenarios.Load(path)
	if err != nil {
		t.Fatalf("the written spec does not load: %v\n%s", err, b)
	}
	if len(minimal.Impls) != 1 || minimal.Impls[0] != impl {
		t.Errorf("impls %v, want [%s]", minimal.Impls, impl)
	}
	replays := make([]scenarios.Job, k)
	for i := range replays {
		replays[i] = scenarios.Job{Spec: minimal, Config: scenarios.Config{Impl: impl, Backend: cluster.RedisServer, Seed: 1000 + uint64(i)}}
	}
	outs, errs := scenarios.RunMany(context.Background(), replays, min(k, 3), nil, nil)
	for i, o := range outs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if o.Result.Verdict != res.Verdict {
			t.Errorf("replay %d of the minimal spec (seed %d): %s, want %s: %s\n%s", i+1, o.Seed, o.Result.Verdict, res.Verdict, o.Result.Reason, b)
		}
	}
}

// TestShrinkRefusesASafeRun: there is nothing to shrink in a run that does
// not fail; the refusal says so, and runs nothing when the verdict is known.
func TestShrinkRefusesASafeRun(t *testing.T) {
	cluster.RequireRedisServer(t)
	spec, err := scenarios.Load("del-race")
	if err != nil {
		t.Fatal(err)
	}
	cfg := scenarios.Config{Impl: "set-nx-px", Backend: cluster.RedisServer}
	ran := 0
	_, err = shrink.Shrink(context.Background(), spec, cfg, shrink.Options{Seeds: 2, Verdict: checker.Safe, Progress: func(shrink.Step) { ran++ }})
	if !errors.Is(err, shrink.NotFailing) || !strings.Contains(err.Error(), "was safe") || ran != 0 {
		t.Errorf("a recorded safe verdict: %v (%d steps), want a refusal before any run", err, ran)
	}
	_, err = shrink.Shrink(context.Background(), spec, cfg, shrink.Options{Seeds: 2, Parallel: 2})
	if !errors.Is(err, shrink.NotFailing) || !strings.Contains(err.Error(), "gave safe, safe") {
		t.Errorf("a safe spec: %v, want a refusal naming its verdicts", err)
	}
}
