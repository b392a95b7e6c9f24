package shrink_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
// past the TTL) each shrink to at most 2 clients, 1 key and 1 fault; the
// minimal spec, written as a file and loaded back as `lockstorm run
// --scenario` loads it, fails on every one of K replays.
func TestShrinkShippedFailures(t *testing.T) {
	cluster.RequireRedisServer(t)
	const k = 3
	for _, tc := range []struct{ scenario, impl string }{
		{"del-race", "setnx-del"},
		{"pause-past-ttl-random", "set-nx-px"},
	} {
		t.Run(tc.scenario+"/"+tc.impl, func(t *testing.T) {
			spec, err := scenarios.Load(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			cfg := scenarios.Config{Impl: tc.impl, Backend: cluster.RedisServer}
			res, err := shrink.Shrink(context.Background(), spec, cfg, shrink.Options{Seeds: k, Parallel: 3, Budget: time.Minute,
				Progress: func(s shrink.Step) { t.Log(s) }})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s\n%s", res.BeforeAfter(), res.Rate())
			if res.Verdict != checker.Unsafe {
				t.Fatalf("shrank the %s verdict class, want unsafe", res.Verdict)
			}
			if a := res.After; a.Clients > 2 || a.Keys != 1 || a.Faults > 1 {
				t.Errorf("minimal spec has %d clients, %d keys, %d faults: want at most 2, 1, 1", a.Clients, a.Keys, a.Faults)
			}
			b, err := res.File("test")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "min.yaml")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(b), "# Minimal witness written by lockstorm shrink, shrunk from "+tc.scenario+" × "+tc.impl) {
				t.Errorf("header:\n%s", b)
			}
			min, err := scenarios.Load(path)
			if err != nil {
				t.Fatalf("the written spec does not load: %v\n%s", err, b)
			}
			if len(min.Impls) != 1 || min.Impls[0] != tc.impl {
				t.Errorf("impls %v, want [%s]", min.Impls, tc.impl)
			}
			replays := make([]scenarios.Job, k)
			for i := range replays {
				replays[i] = scenarios.Job{Spec: min, Config: scenarios.Config{Impl: tc.impl, Backend: cluster.RedisServer, Seed: 100 + uint64(i)}}
			}
			outs, errs := scenarios.RunMany(context.Background(), replays, 3, nil, nil)
			for i, o := range outs {
				if errs[i] != nil {
					t.Fatal(errs[i])
				}
				if o.Result.Verdict != checker.Unsafe {
					t.Errorf("replay %d of the minimal spec (seed %d): %s, want unsafe\n%s", i+1, o.Seed, o.Result.Verdict, b)
				}
			}
		})
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
