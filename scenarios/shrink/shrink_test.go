package shrink_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/shrink"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// TestShrinkShippedFailures: a scheduled bug (del-race × setnx-del: the
// DEL race) and a random one (pause-past-ttl-random × set-nx-px: a pause
// past the TTL) shrink to at most the clients the bug needs, 1 key and 1
// fault; the minimal spec fails on every one of K replays on fresh seeds
// (an inconclusive replay, one the harness could not judge, is replaced
// by a run on another seed), and written as a file it loads back, as
// `lockstorm run --scenario` loads it, as that same spec. By default only
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
			spec, err := spec.Load(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			budget := tc.budget
			if full {
				budget = 5 * time.Minute
			}
			cfg := scenarios.Config{Impl: tc.impl, Backend: cluster.RedisServer}
			// The random search only: TestScheduleReproduces tests the
			// schedule built from a random failure, at a fraction of the
			// wall time a second search would take here.
			res, err := shrink.Shrink(context.Background(), spec, cfg, shrink.Options{Seeds: k, Parallel: min(k, 3), Budget: budget,
				NoSchedule: true, Progress: func(s shrink.Step) { t.Log(s) }})
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
				t.Errorf("the minimal spec failed on %d of the %d fresh seeds judged (%v), want every one of %d", res.Confirmed, res.ConfirmJudged, res.Confirm, k)
			}
			checkFile(t, res, tc.scenario, tc.impl)
		})
	}
}

// checkFile writes res's minimal spec as a file and loads it as `lockstorm
// run --scenario` does: it must be the spec the shrink confirmed on fresh
// seeds (res.Confirmed), under a header saying where it came from.
func checkFile(t *testing.T, res *shrink.Result, scenario, impl string) {
	t.Helper()
	b, err := res.File("test", "")
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
	loaded, err := spec.Load(path)
	if err != nil {
		t.Fatalf("the written spec does not load: %v\n%s", err, b)
	}
	if len(loaded.Impls) != 1 || loaded.Impls[0] != impl {
		t.Errorf("impls %v, want [%s]", loaded.Impls, impl)
	}
	got, _ := loaded.YAML()
	want, _ := res.Minimal.YAML()
	if string(got) != string(want) {
		t.Errorf("the file loads as another spec than the one confirmed:\n%s\nwant\n%s", got, want)
	}
}

// TestShrinkRefusesASafeRun: there is nothing to shrink in a run that does
// not fail; the refusal says so, and runs nothing when the verdict is known.
func TestShrinkRefusesASafeRun(t *testing.T) {
	cluster.RequireRedisServer(t)
	spec, err := spec.Load("del-race")
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

// TestScheduleReproduces: a failing random run's history becomes a
// schedule that fails on every one of several fresh seeds. The random
// run is pause-past-ttl-random × set-nx-px (pauses of random holders at
// random times); its schedule pins the pause to the point its holder was
// at and makes the other client wait for that hold.
func TestScheduleReproduces(t *testing.T) {
	cluster.RequireRedisServer(t)
	sp, err := spec.Load("pause-past-ttl-random")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var o *scenarios.Outcome
	for seed := uint64(1); seed <= 5 && (o == nil || o.Result.Witness == nil); seed++ {
		if o, err = scenarios.Run(ctx, sp, scenarios.Config{Impl: "set-nx-px", Seed: seed, Backend: cluster.RedisServer, RecordSteps: true}); err != nil {
			t.Fatal(err)
		}
	}
	if o.Result.Witness == nil {
		t.Fatalf("pause-past-ttl-random × set-nx-px named no witness on seeds 1-5 (%s)", o.Result.Verdict)
	}
	// The sets of clients are tried in Keeps' order, as the search does:
	// the first whose schedule fails on every seed passes.
	var tried []string
	for _, keep := range shrink.Keeps(o.History, o.Result.Witness) {
		sched, err := shrink.Schedule(sp, o.History, o.Result.Witness, keep)
		if err != nil {
			tried = append(tried, fmt.Sprintf("clients %v: %v", keep, err))
			continue
		}
		y, _ := sched.YAML()
		if sched, err = spec.Parse("schedule.yaml", y); err != nil {
			t.Fatalf("the schedule does not load: %v\n%s", err, y)
		}
		var verdicts []string
		for seed := uint64(101); seed <= 103; seed++ {
			r, err := scenarios.Run(ctx, sched, scenarios.Config{Impl: "set-nx-px", Seed: seed, Backend: cluster.RedisServer})
			if err != nil {
				t.Fatal(err)
			}
			verdicts = append(verdicts, r.Result.Verdict)
		}
		if !slices.ContainsFunc(verdicts, func(v string) bool { return v != checker.Unsafe }) {
			return
		}
		tried = append(tried, fmt.Sprintf("clients %v: %v\n%s", keep, verdicts, y))
	}
	t.Errorf("no schedule of seed %d's witness (%s) was unsafe on seeds 101-103:\n%s", o.Seed, o.Result.Witness.Text, strings.Join(tried, "\n"))
}
