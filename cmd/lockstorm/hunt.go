package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/reports"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

type huntFlags struct {
	impl, backend, out string
	budget             time.Duration
	seed               uint64
	scenarios          multi
	shrinkBudget       time.Duration
}

const huntUsage = "usage: lockstorm hunt --impl NAME [--budget D] [--backend sim] [--scenario NAME]... [--out DIR]"

func parseHuntFlags(args []string) (*huntFlags, error) {
	f := &huntFlags{}
	fs := flag.NewFlagSet("hunt", flag.ContinueOnError)
	fs.StringVar(&f.impl, "impl", "", "the lock to hunt a bug in (required)")
	fs.DurationVar(&f.budget, "budget", 5*time.Minute, "stop after this long when nothing was found")
	fs.StringVar(&f.backend, "backend", cluster.Sim, "where the runs run (sim: many seeds, virtual time)")
	fs.Uint64Var(&f.seed, "seed", 1, "the first seed")
	fs.Var(&f.scenarios, "scenario", "a scenario to search (repeatable; default: every exploratory one the backend runs)")
	fs.StringVar(&f.out, "out", "out", "where the finding's run folder and its witness go")
	fs.DurationVar(&f.shrinkBudget, "shrink-budget", 3*time.Minute, "how long the witness's shrink may take")
	if _, err := parseArgs(fs, args, huntUsage); err != nil {
		return nil, err
	}
	if f.impl == "" {
		return nil, usage("hunt: --impl is required\n%s", huntUsage)
	}
	if _, err := cluster.Resolve(f.backend); err != nil {
		return nil, usage("hunt: --backend: %v", err)
	}
	return f, nil
}

// cmdHunt runs the lock's exploratory scenarios seed after seed, a round
// of every scenario per seed, until a run shows what the lock's
// expectation forbids (a worse verdict or a kind of finding not
// permitted) or the budget is spent; the finding's run folder is kept and
// shrunk to a witness spec and its go test. A lock can be unsafe where it
// is expected to be (setnx-del in del-race-random): that is no finding.
func cmdHunt(ctx context.Context, args []string) error {
	f, err := parseHuntFlags(args)
	if err != nil {
		return err
	}
	specs, err := huntSpecs(f)
	if err != nil {
		return err
	}
	h := scenarios.Hunt{Budget: f.budget, FirstSeed: f.seed,
		Round: func(seed uint64, prior []string) []scenarios.Job {
			var jobs []scenarios.Job
			for _, sp := range specs {
				jobs = append(jobs, scenarios.Job{Spec: sp, Config: scenarios.Config{Impl: f.impl, Seed: seed, Backend: f.backend, Prior: prior}})
			}
			return jobs
		},
		Progress: func(seed uint64, runs int, elapsed time.Duration) {
			fmt.Fprintf(os.Stderr, "hunt: seed %d: %d runs, nothing forbidden (%.0f s of %.0f)\n", seed, runs,
				elapsed.Seconds(), f.budget.Seconds())
		}}
	res, err := h.Run(ctx)
	if err != nil && ctx.Err() == nil {
		return &exitError{2, fmt.Errorf("hunt: %w", err)}
	}
	if o := res.Found; o != nil {
		fmt.Printf("hunt: found after %d runs in %.1f s: %s × %s seed %d: %s, expected %s: %s\n",
			res.Runs, res.Elapsed.Seconds(), o.Scenario, o.Impl, o.Seed, o.Result.Verdict, o.Expected, o.Result.Reason)
		fmt.Printf("hunt: %s\n", res.Line())
		return huntWitness(ctx, f, o)
	}
	fmt.Printf("hunt: nothing found in %d runs (%.1f s); %s\n", res.Runs, res.Elapsed.Seconds(), res.Line())
	return nil
}

// huntSpecs are the scenarios searched: the ones named, else every
// exploratory (random) scenario the backend can run against the lock.
func huntSpecs(f *huntFlags) ([]*spec.Spec, error) {
	names := f.scenarios
	if len(names) == 0 {
		names = spec.Names()
	}
	var out []*spec.Spec
	for _, n := range names {
		sp, err := spec.Load(n)
		if err != nil {
			return nil, &exitError{2, err}
		}
		if len(f.scenarios) == 0 && sp.Mode == "scheduled" {
			continue
		}
		if sp.Unsupported(f.backend) != "" || sp.UnsupportedLock(f.backend, f.impl, false) != "" {
			continue
		}
		if _, _, err := sp.Resolve(f.impl); err != nil {
			return nil, usage("hunt: --impl: %v", err)
		}
		out = append(out, sp)
	}
	if len(out) == 0 {
		return nil, usage("hunt: no scenario to search on the %s backend", f.backend)
	}
	return out, nil
}

// huntWitness keeps the finding's run folder and shrinks it.
func huntWitness(ctx context.Context, f *huntFlags, o *scenarios.Outcome) error {
	dir, err := reports.WriteRunDir(f.out, o, time.Now())
	if err != nil {
		return err
	}
	fmt.Printf("hunt: run folder %s; shrinking it (budget %v)\n", dir, f.shrinkBudget)
	witness := filepath.Join(dir, "witness.yaml")
	err = cmdShrink(ctx, []string{"--impl", f.impl, "--backend", f.backend, "--budget", f.shrinkBudget.String(),
		"--out", witness, dir})
	if err != nil {
		// On sim the run folder is a witness already: its seed replays
		// the same history (lockstorm replay).
		fmt.Printf("hunt: no shrunk witness (%v); the run folder replays the finding: lockstorm replay %s\n", err, dir)
		witness = dir
	}
	return &exitError{1, fmt.Errorf("hunt: %s × %s seed %d: a forbidden finding (witness: %s)", o.Scenario, o.Impl, o.Seed, witness)}
}
