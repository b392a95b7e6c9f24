package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/locktest"
)

// cmdBaseline runs the battery (every scenario, or those given) against one
// registered implementation and records its verdict matrix, so later runs
// (`run --baseline FILE`) gate on it without hand-written expectations.
func cmdBaseline(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("baseline", flag.ContinueOnError)
	var scen multi
	fs.Var(&scen, "scenario", "scenario name or YAML file (repeatable; default: all)")
	impl := fs.String("impl", "", "the registered implementation to record (required)")
	out := fs.String("out", "", "baseline file to write (required)")
	seed := fs.Uint64("seed", 0, "seed (0: each scenario's)")
	backend := fs.String("backend", cluster.Auto, "auto, redis-server or embedded")
	parallel := fs.Int("parallel", 4, "scenario runs at once")
	operands, err := parseArgs(fs, args, "usage: lockstorm baseline --impl NAME --out FILE [--scenario NAME]...")
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return usage("baseline: unexpected argument %q", operands[0])
	}
	if *impl == "" || *out == "" {
		return usage("baseline: --impl and --out are required")
	}
	info, err := lockimpl.Lookup(*impl)
	if err != nil {
		return usage("baseline: --impl: %v", err)
	}
	if _, err := cluster.Resolve(*backend); err != nil {
		return usage("baseline: --backend: %v", err)
	}
	if *parallel < 1 {
		return usage("baseline: --parallel must be at least 1")
	}
	rep, err := locktest.Check(ctx, info, locktest.Battery{Scenarios: scen, Seed: *seed, Backend: *backend,
		Parallel: *parallel, Keep: "none"})
	if err != nil {
		return &exitError{2, err}
	}
	if err := rep.Baseline().WriteFile(*out); err != nil {
		return &exitError{2, err}
	}
	if err := rep.WriteMatrix(os.Stdout); err != nil {
		return &exitError{2, err}
	}
	fmt.Printf("\nbaseline of %d verdicts written to %s; gate on it with: lockstorm run --all --impl %s --baseline %s\n",
		len(rep.Outcomes), *out, *impl, *out)
	return nil
}
